"""Scrollbars drawn from rows made once: the same bar as Textual's, at a fraction of its cost.

Textual draws a scrollbar as a Rich renderable, rendered through a console into rows and
styled row by row, each time its thumb moves, which for a pane that grows (the
transcript at each line, the launch pane at each batch of tokens) is every frame that
shows it: some 3 ms a bar, on the screen's path to the frame that shows a launch's
outcome. A bar's rows are few kinds (track above, thumb, track below, an eighth-glyph at
each end), so here each kind of row is one ``Strip``, made once and shared by every bar
and frame (Textual's own caches hang on the row object: its cut for the screen's columns
and its filters are reused too), and a row's styling is memoized (``row_memo``).

What is drawn is Textual's own bar: ``ScrollBarRender.render_bar``'s segments for the
bar's size, thumb and colours (``ScrollBar.render``), one row per segment; any other
renderable (a custom ``renderer`` without ``render_bar``, the screen hiding scrollbars)
or a horizontal bar, is drawn by Textual as before.
"""

from __future__ import annotations

from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip

from qwengpu_mlx.tui.widgets.row_memo import RowMemo

SHARED_ROWS_MAX = 512  # distinct bar rows kept (a few per bar size and colour)
_shared_rows: dict[tuple, Strip] = {}


def _row(segments: tuple[Segment, ...], width: int) -> Strip:
    """The one ``Strip`` for these segments."""
    key = (segments, width)
    row = _shared_rows.get(key)
    if row is None:
        if len(_shared_rows) >= SHARED_ROWS_MAX:
            _shared_rows.clear()
        row = _shared_rows[key] = Strip(segments, width)
    return row


def bar_rows(bar: ScrollBarRender, width: int, height: int, base: Style | None = None) -> list[Strip] | None:
    """The rows of vertical bar ``bar`` drawn in ``width`` x ``height`` cells as Textual draws
    them (its ``__rich_console__``: one segment a row, each over the widget's own ``base`` style
    as ``Widget.post_render`` puts it); None when ``bar`` is not Textual's kind of vertical bar."""
    style = getattr(bar, "style", None)
    if not isinstance(bar, ScrollBarRender) or not bar.vertical or not isinstance(style, Style):
        return None
    drawn = bar.render_bar(size=height, window_size=bar.window_size, virtual_size=bar.virtual_size,
                           position=bar.position, vertical=True, thickness=width,
                           back_color=style.bgcolor or Color.parse("#555555"),
                           bar_color=style.color or Color.parse("bright_magenta"))
    segments = drawn.segments[:height]
    if base:
        segments = [Segment(text, base + seg_style) for text, seg_style, _ in segments]
    return [_row((segment,), width) for segment in segments]


class SharedRowScrollBar(ScrollBar):
    """Textual's scrollbar with its rows from :func:`bar_rows` (and memoized styling)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._styles_cache = RowMemo()
        self._frame_rows: list[Strip] | None = None  # this frame's rows (``render_lines``)

    def render_lines(self, crop):
        width, height = self.size
        self._frame_rows = bar_rows(self.render(), width, height, self.visual_style.rich_style) \
            if width and height else None
        try:
            return super().render_lines(crop)
        finally:
            self._frame_rows = None

    def render_line(self, y: int) -> Strip:
        rows = self._frame_rows
        if rows is None or not 0 <= y < len(rows):
            return super().render_line(y)
        return rows[y]


class SharedRowScrollbars:
    """Mix in before a scrollable Textual widget: its vertical scrollbar is a :class:`SharedRowScrollBar`.

    Why the property: Textual makes a widget's vertical scrollbar in it (a plain ``ScrollBar``);
    this is its code with the class changed."""

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        if self._vertical_scrollbar is None:
            self._vertical_scrollbar = bar = SharedRowScrollBar(
                vertical=True, name="vertical", thickness=self.scrollbar_size_vertical)
            bar.display = False
            self.app._start_widget(self, bar)
        return self._vertical_scrollbar
