"""The chat transcript: the user's lines, command output, replies."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import RichLog

from qwengpu_mlx.tui.widgets.own_size import OwnSize

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


class Transcript(OwnSize, RichLog):
    DEFAULT_CSS = """
    Transcript { height: 1fr; background: $surface; scrollbar-size-vertical: 1; overflow-x: hidden; overflow-y: auto; }
    """

    def __init__(self, **kw):
        super().__init__(wrap=True, markup=False, highlight=False, auto_scroll=True, min_width=10, **kw)
        self.entries: list[tuple[str, str]] = []  # (kind, text), for tests and history
        self._frame_style = None  # the widget's rich style while one frame renders (``render_lines``)

    def render_lines(self, crop):
        """Why the style is kept for the frame: RichLog asks ``rich_style`` (a walk over every
        ancestor's styles) once or twice per row; a frame that redraws the screen asked it some
        80 times here, a third of the transcript's share of the frame."""
        self._frame_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = None

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
