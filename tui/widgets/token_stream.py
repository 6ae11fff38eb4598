"""A line-based scroll view whose last lines can be rewritten (records complete in place)."""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


class TokenStream(ScrollView, can_focus=True):
    """Holds Rich ``Text`` lines (one terminal row each); ``set_line`` rewrites one in place.

    Only the visible rows are rendered (Textual's line API), so long launches stay cheap;
    the oldest lines are dropped beyond ``max_lines``.
    """

    DEFAULT_CSS = """
    TokenStream {
        background: $surface;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, *, max_lines: int = 20000, name: str | None = None, id: str | None = None,
                 classes: str | None = None):
        super().__init__(name=name, id=id, classes=classes)
        self.max_lines = max_lines
        self._lines: list[Text] = []
        self._strips: list[Strip] = []
        self._first = 0  # absolute index of self._lines[0]
        self._widest = 0
        self.auto_scroll = True

    # ------------------------------------------------------------------ content
    @property
    def line_count(self) -> int:
        return self._first + len(self._lines)

    def plain_lines(self) -> list[str]:
        return [t.plain for t in self._lines]

    def _strip(self, text: Text) -> Strip:
        segs = [s for s in text.render(self.app.console) if s.text != "\n"]
        return Strip(Segment.simplify(segs), text.cell_len)

    def append(self, text: Text) -> int:
        """Add a line; returns its absolute index (for :meth:`set_line`)."""
        text = text.copy()
        text.no_wrap = True
        self._lines.append(text)
        self._strips.append(self._strip(text))
        self._widest = max(self._widest, text.cell_len)
        if len(self._lines) > self.max_lines:
            drop = len(self._lines) - self.max_lines
            del self._lines[:drop]
            del self._strips[:drop]
            self._first += drop
        self._changed(scroll=True)
        return self.line_count - 1

    def set_line(self, index: int, text: Text) -> None:
        i = index - self._first
        if not 0 <= i < len(self._lines):
            return
        text = text.copy()
        text.no_wrap = True
        self._lines[i] = text
        self._strips[i] = self._strip(text)
        self._widest = max(self._widest, text.cell_len)
        self._changed(scroll=False, row=i)

    def clear(self) -> None:
        self._lines.clear()
        self._strips.clear()
        self._first = 0
        self._widest = 0
        self._changed(scroll=False)
        self.scroll_to(0, 0, animate=False)

    def _changed(self, *, scroll: bool, row: int | None = None) -> None:
        self.virtual_size = Size(self._widest, len(self._lines))
        if row is not None:
            self.refresh_line(row - int(self.scroll_offset.y))
        else:
            self.refresh()
        if scroll and self.auto_scroll:
            self.scroll_end(animate=False, immediate=False, x_axis=False)

    # ------------------------------------------------------------------ rendering
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        i = scroll_y + y
        if i >= len(self._strips):
            return Strip.blank(width, self.rich_style)
        return self._strips[i].crop_extend(scroll_x, scroll_x + width, self.rich_style).apply_style(self.rich_style)
