"""The chat input: history on up/down, completion of commands and kernel names.

Completion is Textual's own: a :class:`~textual.suggester.Suggester` shows the rest
of the line dimmed, and right (or tab) accepts it.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.suggester import Suggester
from textual.widgets import Input

from qwengpu_mlx.tui.widgets.own_size import OwnSize

COMMANDS = ("/run ", "/kernels", "/check ", "/help")
CHECK_VALUES = ("on", "off")


class CommandSuggester(Suggester):
    """Suggests a command, a kernel after ``/run``, on/off after ``/check``; else a line from history.

    ``kernels``: the names ``/run`` takes (``dot``, ``examples/kernels/dot.cu``), preferred
    in order. ``history``: the input's list of lines, newest last (read at each call, so
    no cache).
    """

    def __init__(self, kernels: list[str], history: list[str]):
        super().__init__(use_cache=False, case_sensitive=False)
        self.kernels = sorted(kernels, key=lambda k: (len(k), k))  # a name before longer names it starts
        self.history = history

    async def get_suggestion(self, value: str) -> str | None:
        head, space, rest = value.partition(" ")
        if value.startswith("/") and not space:
            return _first(COMMANDS, value)
        if head == "/run" and " " not in rest.strip():
            found = _first(self.kernels, rest.lstrip())
            if found is not None:
                return f"{head}{space}{rest[:len(rest) - len(rest.lstrip())]}{found}"
        if head == "/check" and rest:
            found = _first(CHECK_VALUES, rest)
            if found is not None:
                return f"{head} {found}"
        return _first(reversed(self.history), value)


def _first(candidates, prefix: str) -> str | None:
    """The first candidate that starts with ``prefix`` (case-insensitively) and is longer."""
    return next((c for c in candidates if c.casefold().startswith(prefix) and len(c) > len(prefix)), None)


class PromptInput(OwnSize, Input):
    """An :class:`Input` that remembers submitted lines: up/down walk them, the draft comes back last."""

    BINDINGS = [
        Binding("up", "history(-1)", "Previous line", show=False),
        Binding("down", "history(1)", "Next line", show=False),
        Binding("tab", "complete", "Complete", show=False),
    ]

    def __init__(self, *, kernels: list[str] = (), max_history: int = 500, **kw):
        self.history: list[str] = []
        self.max_history = max_history
        self._pos: int | None = None  # index into history while walking it
        self._draft = ""
        super().__init__(suggester=CommandSuggester(list(kernels), self.history), **kw)

    def remember(self, text: str) -> None:
        """Add a submitted line (not twice in a row); the walk starts again from the newest."""
        text = text.strip()
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
            del self.history[:-self.max_history]
        self._pos = None

    def action_history(self, delta: int) -> None:
        if not self.history or (self._pos is None and delta > 0):
            return
        if self._pos is None:
            self._draft = self.value
            self._pos = len(self.history)
        self._pos = max(0, self._pos + delta)
        if self._pos >= len(self.history):
            self._pos = None
            self._show(self._draft)
        else:
            self._show(self.history[self._pos])

    def _show(self, text: str) -> None:
        self.value = text
        self.cursor_position = len(text)

    def action_complete(self) -> None:
        """Accept the suggestion shown; with none, tab moves the focus as elsewhere."""
        before = self.value
        if self.cursor_at_end:
            self.action_cursor_right()  # Input's own: at the end it takes the suggestion
        if self.value == before:
            self.screen.focus_next()
