"""The message the chat model is writing, shown as it streams (below the transcript).

A slow model (a 2B base on a laptop CPU writes under a token a second) thinks for
minutes: its reasoning and answer show here token by token, then move to the transcript
as one entry each when the message ends (or a tool call starts). Only the tail of a long
reasoning is shown: the pane stays a few lines high.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from qwengpu_mlx.tui.widgets.transcript import STYLES

TAIL_CHARS = 480  # the most of the reasoning shown while it streams (the transcript gets it whole)


class LiveReply(Static):
    DEFAULT_CSS = """
    LiveReply { height: auto; max-height: 10; padding: 0 1; background: $surface; display: none; }
    """

    def __init__(self, **kw):
        super().__init__("", **kw)
        self.reasoning = ""
        self.answer = ""

    def add(self, *, reasoning: str = "", answer: str = "") -> None:
        self.reasoning += reasoning
        self.answer += answer
        self._show()

    def take(self) -> tuple[str, str]:
        """The reasoning and answer so far; the pane is emptied."""
        out = (self.reasoning, self.answer)
        self.reasoning = self.answer = ""
        self._show()
        return out

    def plain(self) -> str:
        return self._text().plain

    def _text(self) -> Text:
        t = Text()
        reasoning = self.reasoning.strip()
        if reasoning:
            tail = reasoning if len(reasoning) <= TAIL_CHARS else "…" + reasoning[-TAIL_CHARS:]
            t.append("thinking › " + tail, style=STYLES["reasoning"])
        if self.answer.strip():
            if reasoning:
                t.append("\n")
            t.append("qwen › " + self.answer.strip(), style=STYLES["assistant"])
        return t

    def _show(self) -> None:
        text = self._text()
        self.display = bool(text.plain)
        self.update(text)
