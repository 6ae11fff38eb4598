"""The dashboard's cheaper rows draw what Textual's own widgets draw.

The oracle for each is Textual itself: a stock ``ScrollBar`` beside a shared-row one, a
``Static`` beside a ``TextRows``, the same content and styles, row for row (text, style,
and the offsets the mouse selects by). And the reuse that makes them cheap: a pane scrolled
by a row draws its other rows as the same objects as before.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("textual")

from rich.table import Table  # noqa: E402
from rich.text import Text  # noqa: E402
from textual.app import App  # noqa: E402
from textual.geometry import Offset, Region  # noqa: E402
from textual.selection import Selection  # noqa: E402
from textual.widgets import RichLog, Static  # noqa: E402

from qwengpu_mlx.tui.widgets.machine_pane import table_text  # noqa: E402
from qwengpu_mlx.tui.widgets.scrollbars import SharedRowScrollbars  # noqa: E402
from qwengpu_mlx.tui.widgets.text_rows import TextRows  # noqa: E402
from qwengpu_mlx.tui.widgets.token_stream import TokenStream  # noqa: E402

LOG_CSS = "{ height: 12; width: 30; scrollbar-size-vertical: 1; overflow-y: scroll; }"


class StockLog(RichLog):
    DEFAULT_CSS = "StockLog " + LOG_CSS


class SharedLog(SharedRowScrollbars, RichLog):
    DEFAULT_CSS = "SharedLog " + LOG_CSS


def rows(widget) -> list[list]:
    """What the widget draws, row by row, as its segments."""
    return [list(strip) for strip in widget.render_lines(Region(0, 0, *widget.size))]


class Logs(App):
    AUTO_FOCUS = None  # a focused pane's bar has colours of its own

    def compose(self):
        yield StockLog(id="stock")
        yield SharedLog(id="shared")


def test_shared_scrollbar_draws_textuals_bar():
    async def go():
        app = Logs()
        async with app.run_test(size=(40, 30)) as pilot:
            logs = [app.query_one("#stock"), app.query_one("#shared")]
            for n in (5, 13, 40, 200):  # no thumb, a thumb nearly the bar, small thumbs
                for log in logs:
                    log.clear()
                    for i in range(n):
                        log.write(f"line {i}")
                await pilot.pause()
                for y in (0, n // 3, n):  # top, part way (thumb eighths), bottom
                    for log in logs:
                        log.scroll_to(y=y, animate=False)
                    await pilot.pause()
                    stock, shared = (log.vertical_scrollbar for log in logs)
                    assert type(shared).__name__ == "SharedRowScrollBar"
                    assert rows(shared) == rows(stock), (n, y)

    asyncio.run(go())


def machine_like_table(p0: str = "T") -> Text:
    """A table as the machine pane draws one: styled header, column styles, highlighted cells."""
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold", expand=False)
    table.add_column("", style="bold", no_wrap=True)
    for lane in range(3):
        table.add_column(f"l{lane}", justify="right", no_wrap=True)
    table.add_row(Text("w0 mask", style="#ffd75f"), *[Text("●", style="#ffd75f") for _ in range(3)])
    table.add_row("w0 r1", "1", Text("-20", style="bold reverse #87d75f"), Text("3.5", style="dim"))
    table.add_row(Text("w0 p0", style="#d787ff"), p0, "F", "")
    return table_text(table)


class Tables(App):
    CSS = ".table { padding: 0 1; width: auto; }"

    def compose(self):
        text = machine_like_table()
        yield Static(text, id="static", classes="table")
        yield TextRows(text, id="rows", classes="table")


def test_text_rows_draw_and_select_as_a_static():
    async def go():
        app = Tables()
        async with app.run_test(size=(60, 12)) as pilot:
            static, text_rows = app.query_one("#static"), app.query_one("#rows", TextRows)
            assert text_rows.size == static.size
            assert rows(text_rows) == rows(static)
            picked = Selection(Offset(2, 1), Offset(6, 2))
            assert text_rows.get_selection(picked) == static.get_selection(picked)
            before = text_rows.render_lines(Region(0, 0, *text_rows.size))
            changed = machine_like_table(p0="F")  # the last row changes, not the table's size
            text_rows.update(changed, layout=False)
            static.update(changed)
            await pilot.pause()
            after = text_rows.render_lines(Region(0, 0, *text_rows.size))
            assert rows(text_rows) == rows(static)
            assert all(a is b for a, b in zip(after[:3], before[:3]))  # unchanged lines: drawn once
            assert after[3] is not before[3] and "F    F" in after[3].text

    asyncio.run(go())


class Stream(App):
    def compose(self):
        yield TokenStream(id="stream")


def test_a_scrolled_stream_reuses_its_rows():
    async def go():
        app = Stream()
        async with app.run_test(size=(40, 10)) as pilot:
            stream = app.query_one(TokenStream)
            for i in range(30):
                stream.append(Text(f"token {i}", style="bold #87d75f" if i % 2 else "dim"))
            await pilot.pause()
            before = stream.render_lines(Region(0, 0, *stream.size))
            stream.append(Text("token 30"))  # scrolls by one row
            await pilot.pause()
            after = stream.render_lines(Region(0, 0, *stream.size))
            assert [strip.text for strip in after[:-1]] == [strip.text for strip in before[1:]]
            assert all(a is b for a, b in zip(after[:-1], before[1:]))

    asyncio.run(go())
