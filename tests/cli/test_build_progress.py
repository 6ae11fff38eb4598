"""``build --base`` shows each phase on the live line (stderr, a terminal only): the
pipeline's ``progress(what, done, total)`` reaches the display with its count."""

from __future__ import annotations

from types import SimpleNamespace

from qwengpu_mlx.cli import progress
from qwengpu_mlx.cli.main import main


def _fake_build(heard: list):
    def build(base, out, machine_name, progress=None, **kw):
        progress("loading the base with mlx-lm", 0, 0)
        progress("calibration text through the base", 512, 1304)
        progress("writing the combined checkpoint's shards", 3, 50)
        heard.append(True)
        (out / "config.json").write_text("{}")
        lay = SimpleNamespace(base_layers=1, circuit_layers=1, hidden=8, base_hidden=2, circuit_offset=4,
                              launch_tokens=3, launch_id=lambda i: 10 + i)
        return SimpleNamespace(out=out, layout=lay, bytes=1, shards=2, seconds=0.0)

    return build


def test_each_phase_and_its_count_reach_the_live_line_on_a_terminal(tmp_path, capsys, monkeypatch):
    heard, shown = [], []
    monkeypatch.setattr("qwengpu_mlx.splice.pipeline.build_from_base", _fake_build(heard))
    monkeypatch.setattr(progress, "wanted", lambda ns, stream=None: True)
    update = progress.Progress.update  # rich's own: what the line is told to show

    def spy(self, task, **fields):
        shown.append((fields.get("description"), fields.get("count")))
        return update(self, task, **fields)

    monkeypatch.setattr(progress.Progress, "update", spy)
    assert main(["build", "--base", str(tmp_path / "base"), "--out", str(tmp_path / "ck")]) == 0
    assert heard and capsys.readouterr().out.startswith(f"wrote {tmp_path / 'ck'}")
    assert shown == [("loading the base with mlx-lm", ""), ("calibration text through the base", "512 of 1,304"),
                     ("writing the combined checkpoint's shards", "3 of 50")]


def test_nothing_on_stderr_where_it_is_not_a_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("qwengpu_mlx.splice.pipeline.build_from_base", _fake_build([]))
    assert main(["build", "--base", str(tmp_path / "base"), "--out", str(tmp_path / "ck")]) == 0
    assert capsys.readouterr().err == ""
