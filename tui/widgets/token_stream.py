"""A line-based scroll view whose last lines can be rewritten (records complete in place).

Lines wrap at the pane's width instead of being cut at its right edge; a line's
continuation rows start ``indent`` cells in, under the text they continue (the launch
pane indents them under the token's meaning).
"""

from __future__ import annotations

from bisect import bisect_right
from contextlib import contextmanager

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from qwengpu_mlx.tui.widgets.row_memo import memo_rows
from qwengpu_mlx.tui.widgets.scrollbars import SharedRowScrollbars

MIN_BODY = 16  # narrower than this beside the indent, continuation rows start at column 0


def wrap_rows(text: Text, console, width: int, indent: int = 0) -> list[Text]:
    """``text`` cut into rows of at most ``width`` cells (words kept whole where they fit);
    rows after the first start with ``indent`` spaces. ``width <= 0``: one row, uncut."""
    if width <= 0 or text.cell_len <= width:
        return [text]
    first = text.wrap(console, width, overflow="fold", no_wrap=False)[0]
    rest = text[len(first.plain):]
    rest = rest[len(rest.plain) - len(rest.plain.lstrip(" ")):]
    if not rest.plain:
        return [first]
    pad = indent if width - indent >= MIN_BODY else 0
    return [first] + [Text(" " * pad) + row for row in rest.wrap(console, width - pad, overflow="fold",
                                                                  no_wrap=False)]


class TokenStream(SharedRowScrollbars, ScrollView, can_focus=True):
    """Holds Rich ``Text`` lines (each wrapped to the width); ``set_line`` rewrites one in place.

    Only the visible rows are rendered (Textual's line API), so long launches stay cheap:
    a line is rendered to strips when it is first shown (a launch writes hundreds of lines a
    second and most scroll past between two frames; only a line wider than the pane is cut
    into rows when it comes, to count them), and the pane's style is read once per frame
    (``rich_style`` walks every ancestor's background). The oldest lines are dropped beyond
    ``max_lines``. The vertical scrollbar is always there, so the wrapping width does not
    change when the stream grows past the pane. Rows scrolled up by new ones, and the
    scrollbar's, are reused as styled before (``row_memo``, ``scrollbars``).
    """

    DEFAULT_CSS = """
    TokenStream {
        background: $surface;
        scrollbar-size-vertical: 1;
        overflow-x: hidden;
        overflow-y: scroll;
    }
    """

    def __init__(self, *, max_lines: int = 20000, name: str | None = None, id: str | None = None,
                 classes: str | None = None):
        super().__init__(name=name, id=id, classes=classes)
        self.max_lines = max_lines
        self._lines: list[Text] = []
        self._indents: list[int] = []
        self._rows: list[list | None] = []  # per line, its wrapped rows: None (one row, not drawn yet), Texts, Strips
        self._counts: list[int] = []  # per line, how many rows it wraps to
        self._starts: list[int] = []  # per line, the row it starts at
        self._first = 0  # absolute index of self._lines[0]
        self._width = 0  # the width the rows are wrapped to (0: not laid out yet, uncut)
        self.auto_scroll = True
        self._held = 0  # inside batch(): size and scroll updates wait for its end
        self._held_scroll: bool | None = None  # what the batch changed (None: nothing)
        self._style = None  # the pane's rich style during one frame's render_lines
        self._view = None  # (content width, first row shown) during one frame's render_lines
        memo_rows(self)

    # ------------------------------------------------------------------ content
    @property
    def line_count(self) -> int:
        return self._first + len(self._lines)

    @property
    def row_count(self) -> int:
        return self._starts[-1] + self._counts[-1] if self._counts else 0

    def plain_lines(self) -> list[str]:
        return [t.plain for t in self._lines]

    def plain_rows(self) -> list[str]:
        """The rows as shown (wrapped), for tests."""
        return [strip.text.rstrip() for i in range(len(self._lines)) for strip in self._strips(i)]

    def _render(self, rows: list[Text]) -> list[Strip]:
        console = self.app.console
        strips = []
        for row in rows:
            row.no_wrap = True
            segs = [s for s in row.render(console) if s.text != "\n"]
            strips.append(Strip(Segment.simplify(segs), row.cell_len))
        return strips

    def _lay_out(self, i: int) -> None:
        """Line ``i``'s row count: a line wider than the pane is wrapped now (its rows kept as text),
        drawn into strips only when first shown (most of a long launch's lines never are)."""
        text = self._lines[i]
        if self._width <= 0 or text.cell_len <= self._width:
            self._rows[i], self._counts[i] = None, 1
        else:
            self._rows[i] = wrap_rows(text, self.app.console, self._width, self._indents[i])
            self._counts[i] = len(self._rows[i])

    def _strips(self, i: int) -> list[Strip]:
        rows = self._rows[i]
        if rows is None:
            rows = wrap_rows(self._lines[i], self.app.console, self._width, self._indents[i])
        if not isinstance(rows[0], Strip):
            rows = self._rows[i] = self._render(rows)
        return rows

    def append(self, text: Text, indent: int = 0) -> int:
        """Add a line; returns its absolute index (for :meth:`set_line`)."""
        self._lines.append(text.copy())
        self._indents.append(indent)
        self._starts.append(self.row_count)
        self._rows.append(None)
        self._counts.append(1)
        self._lay_out(len(self._lines) - 1)
        if len(self._lines) > self.max_lines:
            drop = max(1, self.max_lines // 10)  # in chunks: the row starts are recounted once per chunk
            for seq in (self._lines, self._indents, self._rows, self._counts):
                del seq[:drop]
            self._first += drop
            self._recount(0)
        self._changed(scroll=True)
        return self.line_count - 1

    def set_line(self, index: int, text: Text) -> None:
        i = index - self._first
        if not 0 <= i < len(self._lines):
            return
        self._lines[i] = text.copy()
        before = self._counts[i]
        self._lay_out(i)
        if self._counts[i] != before:
            self._recount(i)
            self._changed(scroll=True)
        else:
            self.refresh_lines(self._starts[i], before)

    def clear(self) -> None:
        for seq in (self._lines, self._indents, self._rows, self._counts, self._starts):
            seq.clear()
        self._first = 0
        self._changed(scroll=False)
        self.scroll_to(0, 0, animate=False)

    def _recount(self, start: int) -> None:
        """Row starts from line ``start`` on, after a line's row count changed."""
        del self._starts[start:]
        row = self._starts[-1] + self._counts[start - 1] if start > 0 else 0
        for count in self._counts[start:]:
            self._starts.append(row)
            row += count

    @contextmanager
    def batch(self):
        """Lines added or rewritten inside are laid out and scrolled to once, at the end
        (the dashboard adds a batch of launch tokens at a time)."""
        self._held += 1
        try:
            yield self
        finally:
            self._held -= 1
            if not self._held and self._held_scroll is not None:
                scroll, self._held_scroll = self._held_scroll, None
                self._changed(scroll=scroll)

    def _changed(self, *, scroll: bool) -> None:
        if self._held:
            self._held_scroll = bool(self._held_scroll) or scroll
            return
        size = Size(self._width, self.row_count)
        if size != self.virtual_size:
            # Not the reactive's assignment: that lays out the whole screen (every widget redrawn)
            # each time a line comes, though this pane's size never follows its content (its
            # height is a share of the screen). Only its scrollbars and scroll range change.
            self.set_reactive(TokenStream.virtual_size, size)
            self._scroll_update(size)
        self.refresh()
        if scroll and self.auto_scroll:
            # at once once laid out (the scroll range was just updated): a scroll after the next
            # frame drew the new lines a frame late, the first frame at the old scroll position
            self.scroll_end(animate=False, immediate=self._width > 0, x_axis=False)

    def on_resize(self, event: events.Resize) -> None:
        """Rewrap every line to the new width."""
        width = self.scrollable_content_region.width
        if width == self._width:
            return
        self._width = width
        for i in range(len(self._lines)):
            self._lay_out(i)
        self._recount(0)
        self._changed(scroll=True)

    # ------------------------------------------------------------------ rendering
    def render_lines(self, crop):
        self._style = self.rich_style  # once a frame, not twice a row
        self._view = (self.scrollable_content_region.width, self.scroll_offset.y)  # likewise (CSS lookups)
        try:
            return super().render_lines(crop)
        finally:
            self._style = self._view = None

    def render_line(self, y: int) -> Strip:
        style = self._style or self.rich_style
        width, top = self._view or (self.scrollable_content_region.width, self.scroll_offset.y)
        row = top + y
        if not self._lines or row >= self.row_count:
            return Strip.blank(width, style)
        i = bisect_right(self._starts, row) - 1
        strip = self._strips(i)[row - self._starts[i]]
        return strip.crop_extend(0, width, style).apply_style(style)
