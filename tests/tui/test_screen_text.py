"""``python -m qwengpu_mlx.tui.screen_text``: lines entered as a user types them, the screen printed after each.

Expected values: dot's launch file computes [1, 2, 3] . [4, 5, 6] = 32 (written here);
a line marked ``esc:`` is cancelled once its launch shows, so its outcome says cancelled.
"""

from __future__ import annotations

import asyncio
import io

import pytest

pytest.importorskip("textual")

from qwengpu_mlx.tui.chat import NoChat  # noqa: E402
from qwengpu_mlx.tui.screen_text import main, session  # noqa: E402


def test_each_line_is_entered_and_the_screen_printed_after_it():
    out = io.StringIO()
    asyncio.run(session(["/run dot", "esc:/run float_sum", "/help"], NoChat(), (160, 48), False, 120.0, out))
    screens = out.getvalue().split("=== after: ")[1:]
    assert [s.splitlines()[0] for s in screens] == ["/run dot", "esc:/run float_sum", "/help"]
    for s in screens:
        rows = s.splitlines()[1:]
        assert len(rows) == 48 and max(len(r) for r in rows) <= 160, rows
    assert "out = [32]" in screens[0] and "check: exact" in screens[0]
    assert "launch cancelled after" in screens[1] and "│  cancelled" in screens[1]
    assert "/run" in screens[2] and "error:" not in out.getvalue()


def test_a_model_that_cannot_be_opened_is_one_error_line(tmp_path, capsys):
    missing = tmp_path / "no-such-model"
    assert main(["--model", str(missing), "hi"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --model {missing}: no such directory") and "Traceback" not in err


@pytest.mark.parametrize("size", ["abc", "160x", "0x48"])
def test_a_bad_size_is_a_usage_error(size, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--size", size, "/help"])
    assert stop.value.code == 2 and "argument --size" in capsys.readouterr().err
