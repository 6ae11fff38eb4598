"""The machine pane: per-lane registers, predicates, the active mask, memory words.

Everything shown is decoded from the streamed records (``VAL``, ``PVAL``, ``EXEC``,
``MEM``); after the launch the memory is the image read from the model's recurrent
state (``ModelLaunch.memory``).
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

from qwengpu_mlx.core.float32 import float32_text, float_words
from qwengpu_mlx.core.machine import to_signed

from qwengpu_mlx.tui.decode import MachineState, lane_list, mask_bits
from qwengpu_mlx.tui.widgets.text_rows import TextRows

CHANGED = "bold reverse #87d75f"
CHANGED_MEM = "bold reverse #5fafff"
INACTIVE = "dim"


def render_plain(renderable, width: int = 80) -> str:
    """A Rich renderable as plain text (for tests and logs)."""
    console = Console(width=width, record=True, color_system=None, force_terminal=False, file=_Null())
    console.print(renderable)
    return console.export_text()


def table_text(table: Table) -> Text:
    """The table laid out as Rich lays out these tables (no box, one space of padding each
    side of a cell, the table's header style over the header row, a column's style under
    each of its cells), into styled text. Why: Rich measures and renders a table cell by
    cell, some 0.1 s for the registers of an 8-thread kernel; a Static holding the table
    did that for each measure and each frame, on the UI thread, while the launch waited
    for the GIL."""
    columns = table.columns
    cells = [[Text(c) if isinstance(c, str) else c for c in col.cells] for col in columns]
    headers = [Text(c.header) if isinstance(c.header, str) else c.header for c in columns]
    widths = [max([h.cell_len] + [c.cell_len for c in col]) for h, col in zip(headers, cells)]
    rows = [_grid_row(headers, columns, widths, str(table.header_style or ""), header=True)]
    for r in range(table.row_count):
        rows.append(_grid_row([col[r] for col in cells], columns, widths, ""))
    return Text("\n", no_wrap=True, overflow="crop").join(rows)


def _grid_row(cells: list[Text], columns, widths: list[int], style: str, header: bool = False) -> Text:
    """One row: per cell a space, the cell justified in its column's width (its own style over the
    padding too), a space; the pieces are the runs Rich draws, so the screen draws them alike."""
    row = Text(no_wrap=True, overflow="crop")
    for cell, column, width in zip(cells, columns, widths):
        base = style if header else str(column.style or "")
        body = cell.copy()
        if column.justify == "right":
            body.pad_left(width - cell.cell_len)
        else:
            body.pad_right(width - cell.cell_len)
        body.stylize_before(base)
        row.append(" ", base)
        row.append_text(body)
        row.append(" ", base)
    return row


class _Null:
    def write(self, *_):
        return 0

    def flush(self):
        pass


def _val(v: int) -> str:
    return str(to_signed(v))


def _word(w: int, v: int, floats: set[int]) -> str:
    """A memory word as its array declares it: a ``float*`` element as a float, else an int."""
    return float32_text(v) if w in floats else _val(v)


def step_text(st: MachineState | None) -> Text:
    if st is None:
        return Text("no launch yet: /run examples/kernels/dot.cu a=1,2,3 b=4,5,6 out=0 n=3", style="dim")
    lanes = st.machine.lanes
    t = Text()
    t.append(f"{st.program.kernel}", style="bold")
    t.append(f"  cta {st.ctaid}  ")
    if st.block is None:
        t.append("waiting for EXEC", style="dim")
    else:
        t.append(f"EXEC B{st.block} w{st.warp} ", style="bold #ffd75f")
        t.append(f"mask {mask_bits(st.mask, lanes)}", style="#ffd75f")
        t.append(f" (lanes {lane_list(st.mask, lanes)})", style="dim")
    if st.finished:
        t.append(f"  {st.finished}", style="bold #5fd75f" if st.finished == "STOP" else "bold #ff5f5f")
    return t


def registers_table(st: MachineState | None) -> Table:
    """Rows (warp, register) and (warp, predicates); columns are lanes (``·`` = never written); a
    register last written as a float (the PTX's ``.f32``: ``decode``) shows that float."""
    lanes = st.machine.lanes if st else 4
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold", expand=False)
    table.add_column("", style="bold", no_wrap=True)
    for lane in range(lanes):
        table.add_column(f"l{lane}", justify="right", no_wrap=True)
    if st is None:
        return table
    regs = st.registers_used()
    npreds = st.preds_used()
    for w in range(st.warps):
        current = st.warp == w
        exist = [w * lanes + lane < st.program.block_dim for lane in range(lanes)]
        if current:
            table.add_row(Text(f"w{w} mask", style="#ffd75f"),
                          *[Text("●" if st.mask >> lane & 1 else "○",
                                 style="#ffd75f" if st.mask >> lane & 1 else "dim") for lane in range(lanes)])
        status = st.warp_status.get(w)
        for r in regs:
            cells = []
            for lane in range(lanes):
                v = st.regs.get((w, lane, r))
                style = ""
                if (w, lane, r) in st.changed_regs:
                    style = CHANGED
                elif current and not st.mask >> lane & 1:
                    style = INACTIVE
                shown = float32_text(v) if (w, lane, r) in st.float_regs else _val(v) if v is not None else "·"
                cells.append(Text(shown if exist[lane] else "", style=style))
            table.add_row(Text(f"w{w} r{r}", style="bold" if current else ""), *cells)
        if st.program.preds_used or any(k[0] == w for k in st.preds):  # rows only when predicates exist
            _pred_row(table, st, w, lanes, exist, npreds)
        if status:
            table.add_row(Text(f"w{w} status", style="dim"), Text(status.split(",")[0], style="dim"),
                          *[Text("") for _ in range(lanes - 1)])
    return table


def _pred_row(table: Table, st: MachineState, w: int, lanes: int, exist: list[bool], npreds: int) -> None:
    cells = []
    for lane in range(lanes):
        bits = st.preds.get((w, lane))
        txt = "" if not exist[lane] else ("·" * npreds if bits is None else
                                           "".join("T" if bits >> p & 1 else "F" for p in range(npreds)))
        cells.append(Text(txt, style=CHANGED if (w, lane) in st.changed_preds else ""))
    table.add_row(Text(f"w{w} p0..{npreds - 1}" if npreds > 1 else f"w{w} p0", style="#d787ff"), *cells)


def memory_rows(st: MachineState) -> list[tuple[int, str, int]]:
    """(word, name, unsigned value) for the program's words and every word written.

    The arrays the launch wrote come first (whole, in address order), then the others:
    a kernel's output is in view without scrolling past its inputs."""
    names = st.word_names()
    words = sorted(set(names) | st.written_words | {w for w, v in enumerate(st.memory) if v})
    initial = st.program.memory
    written = st.written_words | {w for w in words if w < len(st.memory) and st.memory[w] != (
        initial[w] if w < len(initial) else 0)}

    def array(w: int) -> str:
        return names[w].partition("[")[0] if w in names else f"w{w}"

    touched = {array(w) for w in written}
    words.sort(key=lambda w: (array(w) not in touched, w))
    return [(w, names.get(w, ""), st.memory[w]) for w in words if 0 <= w < len(st.memory)]


def memory_table(st: MachineState | None) -> Table:
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold", expand=False)
    table.add_column("word", justify="right", style="dim", no_wrap=True)
    table.add_column("name", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    if st is None:
        return table
    initial = st.program.memory
    floats = float_words(st.program)
    for w, name, v in memory_rows(st):
        style = ""
        if w in st.changed_words:
            style = CHANGED_MEM
        elif w < len(initial) and v != initial[w]:
            style = "bold #5fafff"
        value = Text(_word(w, v, floats), style=style)
        if st.stream_memory is not None and st.stream_memory[w] != v:
            value.append(f" (MEM said {_word(w, st.stream_memory[w], floats)})", style="bold #ff5f5f")
        table.add_row(str(w), name, value)
    return table


class MachinePane(Vertical):
    DEFAULT_CSS = """
    MachinePane { height: 1fr; }
    MachinePane #machine-step { height: 1; padding: 0 1; }
    MachinePane Horizontal { height: 1fr; }
    MachinePane VerticalScroll { width: 1fr; height: 1fr; }
    MachinePane #memory-scroll { width: auto; min-width: 30; max-width: 50%; border-left: vkey $primary 40%; }
    MachinePane .section { color: $text-muted; text-style: bold; padding: 0 1; }
    MachinePane .table { padding: 0 1; width: auto; }
    """

    def __init__(self, **kw):
        super().__init__(**kw)
        self.state: MachineState | None = None
        self.border_title = "machine"
        self._fitted_kernel: str | None = None  # the kernel the tables' room was last fitted to
        self._fit_next = False  # the next refresh_state fits the tables' room (a new kernel came)

    def compose(self) -> ComposeResult:
        yield Static(step_text(None), id="machine-step")
        with Horizontal():
            with VerticalScroll(id="registers-scroll"):
                yield Static("registers (VAL) · predicates (PVAL) · mask (EXEC)", classes="section",
                             id="registers-title")
                yield TextRows(table_text(registers_table(None)), id="registers", classes="table")
            with VerticalScroll(id="memory-scroll"):
                yield Static("memory", classes="section", id="memory-title")
                yield TextRows(table_text(memory_table(None)), id="memory", classes="table")

    def show(self, state: MachineState | None, draw: bool = True) -> None:
        """A new launch's state (None: none): the tables fit to it when its kernel is not the last
        one's (a rerun keeps the room its tables had). ``draw=False``: the tables are built at the
        next :meth:`refresh_state` (the dashboard's batch that starts a launch may also end it: the
        tables are then built once, with the outcome, instead of three times)."""
        kernel = None if state is None else state.program.kernel
        if kernel is not None and kernel != self._fitted_kernel:
            self._fit_next, self._fitted_kernel = True, kernel
        self.state = state
        if draw:
            self.refresh_state()

    def refresh_state(self) -> None:
        """The state's tables redrawn (their room shrunk to them too when a new kernel came: ``_set_table``)."""
        st, fit, self._fit_next = self.state, self._fit_next, False
        self._set_row("#machine-step", step_text(st))
        self._set_table("#registers", table_text(registers_table(st)), fit)
        self._set_table("#memory", table_text(memory_table(st)), fit)
        src = "memory" if st is None else (
            "memory (recurrent state)" if st.memory_source == "recurrent state" else "memory (MEM records)")
        self._set_row("#memory-title", src)

    def _set_row(self, selector: str, content) -> None:
        """A one-row Static's new content, redrawn only when it changed (most refreshes of a launch
        change a few registers: each Static redrawn costs the frame its rows)."""
        static = self.query_one(selector, Static)
        if getattr(static, "shown", None) != content:
            static.update(content, layout=False)
            static.shown = content

    def _set_table(self, selector: str, text: Text, fit: bool = False) -> None:
        """A table's new text; the screen is laid out again only when the table outgrew the room it
        was given (a layout redraws every widget and took a fifth of a second on a loaded machine:
        during a launch most updates change values, and a table only grows; a new launch of the
        same kernel fits the room of the last), or with ``fit`` when it is smaller than its room
        (``show``: another kernel's launch)."""
        static = self.query_one(selector, TextRows)
        width = max((line.cell_len for line in text.split()), default=0)
        height = len(text.plain.splitlines())
        room = getattr(static, "table_room", None)
        layout = room is None or width > room[0] or height > room[1] or (fit and (width, height) != room)
        if not layout and getattr(static, "shown", None) == text:
            return  # unchanged (e.g. memory between two MEM records): not redrawn
        static.update(text, layout=layout)
        static.shown = text
        if layout:
            static.table_room = (width, height)

    def memory_text(self) -> str:
        return render_plain(memory_table(self.state))

    def registers_text(self) -> str:
        return render_plain(Group(step_text(self.state), registers_table(self.state)))
