"""The launch pane shows every line it was given, once, in the order given.

Expected values: the lines the test adds (their indices 0..N-1, in order), nothing the pane
computes. Each line is added in a batch of its own and then dropped, as the launch decoder
drops a record's line once it is done: the next line is then often made at the freed
line's address, and a pane that found rows by ``id(line)`` drew the new line over an
old line's row (a program's second launch drew some of its lines into the first's).
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("textual")

from textual.app import App  # noqa: E402

from qwengpu_mlx.tui.decode import Line  # noqa: E402
from qwengpu_mlx.tui.widgets.launch_pane import LaunchPane  # noqa: E402

LINES = 50


class PaneApp(App):
    def compose(self):
        yield LaunchPane()


def test_lines_dropped_after_their_batch_are_all_shown_in_order():
    async def go():
        app = PaneApp()
        async with app.run_test(size=(120, 40)):
            pane = app.query_one(LaunchPane)
            for i in range(LINES):
                with pane.batch():
                    pane.add(Line(i, 5, f"EXEC({i})", f"step {i}", "EXEC"))
            for i in range(LINES):  # a record's line changed after its batch, outside any batch
                line = Line(LINES + i, 7, f"VAL({i})", f"value {i}", "VAL")
                pane.add(line)
                pane.update(line)
            return [int(text.split()[0]) for text in pane.plain_text().splitlines()]

    assert asyncio.run(go()) == list(range(2 * LINES))
