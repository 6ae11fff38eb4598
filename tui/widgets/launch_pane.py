"""The launch pane: every token the model writes, live, with its decoded meaning (wrapped, not cut)."""

from __future__ import annotations

from contextlib import contextmanager

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

from qwengpu_mlx.tui.decode import Line
from qwengpu_mlx.tui.widgets.token_stream import TokenStream

KIND_STYLES = {
    "PROMPT": "dim italic",
    "EXEC": "bold #ffd75f",
    "VAL": "#87d75f",
    "PVAL": "#d787ff",
    "MEM": "#5fafff",
    "ENT": "#5fd7d7",
    "WST": "#8fa8a8",
    "CTA": "bold #ffffff on #005f87",
    "STOP": "bold #000000 on #5fd75f",
    "FAULT": "bold #ffffff on #d70000",
    "PROG": "dim",
    "NOTE": "italic #ff8787",
}
MEANING_STYLES = {
    "EXEC": "#ffd75f",
    "STOP": "#5fd75f",
    "FAULT": "bold #ff5f5f",
    "CTA": "bold",
}


MEANING_COLUMN = 31  # where the meaning starts: its continuation rows line up under it
NOTE_COLUMN = 12


def format_line(line: Line) -> Text:
    """``index  id  TOKEN  meaning``, styled by the token's kind."""
    style = KIND_STYLES.get(line.kind, "")
    t = Text(no_wrap=True)
    if line.kind == "PROMPT":
        t.append(f"{'':>4} {'':>5}  ", style="dim")
        t.append(f"{line.text:<18}", style="dim")
        t.append(f" {line.meaning}", style="dim italic")
        return t
    if line.kind == "NOTE":
        t.append(f"{'':>4} {'':>5}  {line.text}", style=style)
        return t
    t.append(f"{line.index:>4} ", style="dim")
    t.append(f"{line.token_id if line.token_id is not None else '':>5}  ", style="dim")
    t.append(f"{line.text:<18}", style=style)
    t.append(" ")
    t.append(line.meaning, style=MEANING_STYLES.get(line.kind, ""))
    if line.chunks and line.value is not None and line.kind in ("VAL", "MEM", "ENT", "WST"):
        joined = f" = 0x{line.value:08x}" if line.kind in ("ENT", "WST") else ""
        t.append("  [" + " ".join(f"C{j} {c}" for j, c in enumerate(line.chunks)) + joined + "]", style="dim")
    return t


class LaunchPane(Vertical):
    """Border-titled pane around a :class:`TokenStream`; lines are :class:`~..decode.Line`."""

    DEFAULT_CSS = """
    LaunchPane { height: 1fr; }
    LaunchPane > TokenStream { height: 1fr; }
    """

    def __init__(self, **kw):
        super().__init__(**kw)
        # id(Line) -> (stream row, the Line): the Line is held so that no later line, made after
        # it was freed, takes its id and is drawn over its row instead of after the others
        self._rows: dict[int, tuple[int, Line]] = {}
        self.border_title = self._title = "launch"
        self.kind_counts: dict[str, int] = {}
        self._held = 0  # inside batch(): lines are formatted at its end
        self._pending: dict[int, Line] = {}  # id(Line) -> a line added or changed in the batch, in order

    def compose(self) -> ComposeResult:
        yield TokenStream(id="token-stream")

    @property
    def stream(self) -> TokenStream:
        return self.query_one(TokenStream)

    @contextmanager
    def batch(self):
        """Lines added or changed inside are formatted once, at the end, and the stream laid out
        and scrolled once. Why: a record's line changes at each of its chunks, mostly within one
        batch of the dashboard's; formatting and wrapping it at each was half of a launch's token
        handling on the screen."""
        self._held += 1
        try:
            with self.stream.batch():
                yield self
                if self._held == 1:
                    self._flush()
        finally:
            self._held -= 1

    def _flush(self) -> None:
        pending, self._pending = self._pending, {}
        for line in pending.values():
            row = self._row(line)
            if row is None:
                self._append(line)
            else:
                self.stream.set_line(row, format_line(line))

    def _row(self, line: Line) -> int | None:
        at = self._rows.get(id(line))
        return None if at is None else at[0]

    def _append(self, line: Line) -> None:
        self._rows[id(line)] = self.stream.append(format_line(line), indent=MEANING_COLUMN), line

    def clear(self) -> None:
        self._pending.clear()
        self._rows.clear()
        self.kind_counts.clear()
        self.stream.clear()
        if self.border_subtitle:
            self.border_subtitle = ""

    def show_title(self, title: str) -> None:
        """The border's title. Why not ``border_title`` itself: setting it repaints the whole pane
        (every row of its border, in the frame that shows a launch's outcome) even when a rerun's
        title is the one already shown."""
        if title != self._title:
            self.border_title = self._title = title

    def add(self, line: Line) -> None:
        if line.index >= 0:
            self.kind_counts[line.kind] = self.kind_counts.get(line.kind, 0) + 1
        if self._held:
            self._pending[id(line)] = line
        else:
            self._append(line)

    def add_lines(self, lines) -> None:
        with self.batch():
            for line in lines:
                self.add(line)

    def update(self, line: Line) -> None:
        row = self._row(line)
        if row is None and id(line) not in self._pending:
            self.add(line)
        elif self._held:
            self._pending[id(line)] = line
        else:
            self.stream.set_line(row, format_line(line))

    def note(self, text: str) -> None:
        self._flush()  # after the lines before it
        self.stream.append(format_line(Line(-1, None, text, "", "NOTE")), indent=NOTE_COLUMN)

    def plain_text(self) -> str:
        return "\n".join(self.stream.plain_lines())
