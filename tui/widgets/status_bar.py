"""One-line status: model, kernel, tokens, tokens/s, steps, check status, phase."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

SEP = ("  │  ", "dim")
CHECK_STYLES = {"exact": "bold #5fd75f", "mismatch": "bold #ff5f5f", "off": "dim", "on": "", "pending": "italic"}
PHASE_STYLES = {"done": "#5fd75f", "error": "bold #ff5f5f", "cancelled": "#ffaf5f", "idle": "dim"}


@dataclass
class Status:
    model: str = "-"  # what runs the launches on the screen (``tui.model_label``)
    kernel: str = "-"
    tokens: int = 0
    tokens_per_s: float | None = None
    steps: int = 0
    check: str = "on"  # off | on (waiting for a launch) | pending | exact | mismatch
    mismatches: int = 0
    phase: str = "idle"
    show_timing: bool = True


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def __init__(self, status: Status | None = None, **kw):
        self.status = status or Status()
        self._shown = self._text()
        super().__init__(self._shown, **kw)

    def set(self, **changes) -> None:
        """The fields changed; the row is redrawn only when what it shows changed (a repaint of this
        full-width row widens the screen's redraw to the whole screen)."""
        for k, v in changes.items():
            setattr(self.status, k, v)
        text = self._text()
        if text != self._shown:
            self._shown = text
            self.update(text, layout=False)  # one row, always: no layout of the screen

    def _text(self) -> Text:
        s = self.status
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append("model: ", style="dim")
        t.append(s.model, style="bold")
        t.append(*SEP)
        t.append("kernel: ", style="dim")
        t.append(s.kernel)
        t.append(*SEP)
        t.append("tokens: ", style="dim")
        t.append(str(s.tokens))
        if s.show_timing:
            t.append(*SEP)
            t.append(f"{s.tokens_per_s:.1f} tok/s" if s.tokens_per_s else "- tok/s")
        t.append(*SEP)
        t.append("steps: ", style="dim")
        t.append(str(s.steps))
        t.append(*SEP)
        t.append("check: ", style="dim")
        check = s.check + (f" ({s.mismatches})" if s.check == "mismatch" else "")
        t.append(check, style=CHECK_STYLES.get(s.check, ""))
        t.append(*SEP)
        t.append(s.phase, style=PHASE_STYLES.get(s.phase, "italic #ffd75f"))
        return t

    def plain(self) -> str:
        return self._text().plain
