"""A block of styled text shown row for row, drawn by Rich: the machine pane's tables.

Why not a ``Static``: a Static turns its Rich ``Text`` into Textual's ``Content`` and renders
all of it through Textual's styles at each update, 3-4 ms for a table of a dozen rows
(idle machine), and the machine pane redraws its tables in the frame that shows a
launch's outcome (the memory read back, the last step), on the user's wait. Here each row
is the text's own Rich rendering (no wrapping: a table's rows are cut at the pane's edge,
as its ``Text`` asks), over the widget's CSS style as a Static lays it under its text, each
piece marked with its place in the text as a Static marks it (the mouse selects and copies
the text); a row whose text is unchanged by an update keeps its drawn strip, and its
styled row is reused (``row_memo``).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual.style import Style as TextualStyle
from textual.widget import Widget

from qwengpu_mlx.tui.widgets.row_memo import memo_rows

_offset_styles: dict[tuple[int, int], Style] = {}  # (x, y) -> the style marking a piece's place


def _offset_style(x: int, y: int) -> Style:
    style = _offset_styles.get((x, y))
    if style is None:
        style = _offset_styles[(x, y)] = Style.from_meta({"offset": (x, y)})
    return style


class TextRows(Widget):
    """``Text`` (or a plain string) shown one line a row; ``update`` replaces it."""

    DEFAULT_CSS = """
    TextRows { height: auto; }
    """

    def __init__(self, content: Text | str = "", **kw):
        super().__init__(**kw)
        memo_rows(self)
        self._lines: list[Text] = []
        self._rows: list[Strip | None] = []  # per line, its strip once drawn (None: not yet)
        self._base: Style | None = None  # the CSS style the rows were drawn over
        self._set(content)

    @property
    def plain(self) -> str:
        return "\n".join(line.plain for line in self._lines)

    def _set(self, content: Text | str) -> None:
        text = Text(content) if isinstance(content, str) else content
        lines = text.split("\n", allow_blank=True) if text.plain else []
        old = dict(zip(range(len(self._lines)), zip(self._lines, self._rows)))
        self._rows = [old[y][1] if y in old and old[y][0] == line else None for y, line in enumerate(lines)]
        self._lines = lines

    def update(self, content: Text | str, *, layout: bool = True) -> None:
        """New text (rows whose line is unchanged keep their strip); ``layout=False`` when the
        widget's room does not change with it."""
        self._set(content)
        self.refresh(layout=layout)

    def get_content_width(self, container, viewport) -> int:
        return max((line.cell_len for line in self._lines), default=0)

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self._lines)

    def get_selection(self, selection):
        return selection.extract(self.plain), "\n"

    def selection_updated(self, selection) -> None:
        self._rows = [None] * len(self._lines)
        self.refresh()

    def render_lines(self, crop):
        base = self.visual_style.rich_style
        if base != self._base:  # read once a frame; another style (a theme) draws every row again
            self._base, self._rows = base, [None] * len(self._lines)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        if not 0 <= y < len(self._lines):
            return Strip.blank(self.size.width, self._base)
        row = self._rows[y]
        if row is None:
            row = self._draw(y)
            if self.text_selection is None:
                self._rows[y] = row
        return row

    def _draw(self, y: int) -> Strip:
        line, base = self._lines[y], self._base or Style()
        selection = self.text_selection
        span = selection.get_span(y) if selection is not None else None
        if span is not None:
            start, end = span
            picked = TextualStyle.from_styles(self.screen.get_component_styles("screen--selection"))
            line = line.copy()
            line.stylize(picked.rich_style, start, len(line) if end == -1 else end)
        segments, x = [], 0
        for text, style, _ in line.render(self.app.console):
            if text and text != "\n":
                segments.append(Segment(text, (base + style if style else base) + _offset_style(x, y)))
                x += len(text)
        return Strip(segments, line.cell_len)
