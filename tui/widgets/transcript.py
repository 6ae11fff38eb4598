"""The chat transcript: the user's lines, command output, replies."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import RichLog

from qwengpu_mlx.tui.widgets.own_size import OwnSize
from qwengpu_mlx.tui.widgets.row_memo import memo_rows
from qwengpu_mlx.tui.widgets.scrollbars import SharedRowScrollbars

STYLES = {
    "user": "bold #ffd75f",
    "info": "",
    "result": "bold #5fd75f",
    "error": "bold #ff5f5f",
    "assistant": "#87d7ff",
    "dim": "dim",
    "reasoning": "italic dim #af87ff",  # the model's think block: shown, set apart from its answer
    "stdout": "",  # a program's own lines, as it wrote them
    "stderr": "#ff8787",
}


class Transcript(SharedRowScrollbars, OwnSize, RichLog):
    """Its rows and scrollbar reused across frames (``row_memo``, ``scrollbars``): a new line scrolls
    every row, and the frames that echo a command and show its outcome drew them all again."""

    DEFAULT_CSS = """
    Transcript { height: 1fr; background: $surface; scrollbar-size-vertical: 1; overflow-x: hidden; overflow-y: auto; }
    """

    def __init__(self, **kw):
        super().__init__(wrap=True, markup=False, highlight=False, auto_scroll=True, min_width=10, **kw)
        self.entries: list[tuple[str, str]] = []  # (kind, text), for tests and history
        self._frame_style = None  # the widget's rich style while one frame renders (``render_lines``)
        self._frame_view = None  # (content width, scroll offset) while one frame renders
        memo_rows(self)

    def render_lines(self, crop):
        """Why the style, width and scroll are kept for the frame: RichLog asks ``rich_style`` (a
        walk over every ancestor's styles) once or twice per row, and the content width (the
        scrollbar's gutter, from the styles) once per row; a frame that redraws the screen asked
        the style some 80 times here, a third of the transcript's share of the frame."""
        self._frame_style = self.rich_style
        self._frame_view = (self.scrollable_content_region.width, self.scroll_offset)
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = self._frame_view = None

    def render_line(self, y: int):
        """RichLog's row, with the frame's width, scroll and style."""
        if self._frame_view is None:
            return super().render_line(y)
        width, (scroll_x, scroll_y) = self._frame_view
        return self._render_line(scroll_y + y, scroll_x, width).apply_style(self._frame_style)

    @property
    def rich_style(self):
        return self._frame_style or super().rich_style

    def say(self, text: str, kind: str = "info") -> None:
        """A line at the end, scrolled to at once. Why at once: RichLog scrolls to a new line after
        the screen's next frame (its scroll range follows a layout there), so a line took two frames
        to show, the first drawn at the old scroll position; here the scroll range follows the line
        as it is written (``OwnSize``)."""
        self.entries.append((kind, text))
        prefix = {"user": "› ", "assistant": "qwen › ", "reasoning": "thinking › ", "error": "error: "}.get(kind, "")
        line = Text(prefix + text, style=STYLES.get(kind, ""))
        if not self._size_known:  # RichLog keeps the line until it knows its width, then scrolls
            self.write(line)
            return
        self.write(line, scroll_end=False)
        self.scroll_end(animate=False, immediate=True, x_axis=False)

    def clear_all(self) -> None:
        self.entries.clear()
        self.clear()

    def plain_text(self) -> str:
        return "\n".join(text for _, text in self.entries)
