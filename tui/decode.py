"""Streaming decoder: launch tokens -> readable lines and the machine state they imply.

Pure Python (no Textual, no MLX), so it can be tested and reused on its own. The
dashboard feeds it every generated token as the model writes it:

* ``EXEC(b, w, mask)`` sets the current step (block, warp, active lanes);
* ``VAL(slot, lane)`` + ``C0 C1 C2`` writes register
  ``program.blocks[b].instrs[slot].dst`` of lane ``lane`` of the current warp (a float's
  bits where that instruction writes a register the PTX declares ``.f32``: the lowering
  marks it ``float_dst``, and the value is shown as that float);
* ``PVAL(lane, bits)`` is the predicate file of ``lane`` of the current warp;
* ``MEM(item, addr)`` + chunks writes memory word ``addr``;
* ``ENT``/``WST`` + chunks are SIMT stack entries and warp statuses (decoded with
  ``qwengpu_mlx.core.records``' layouts for the decoder's machine, the control unit's own);
* ``CTA(c)`` starts thread block ``c``; ``STOP``/``FAULT`` end the launch (after ``STOP``
  every warp's status is ``done``).

A record's header opens a line; its chunks complete the same line (``replace``).
Masks are written lane 0 first (``1110`` = lanes 0, 1, 2), as in the reference trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu_mlx.core import records
from qwengpu_mlx.core.float32 import float32_text
from qwengpu_mlx.core.isa import Instr, Program
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig, to_signed
from qwengpu_mlx.core.records import mask_bits  # noqa: F401 - re-exported for the panes
from qwengpu_mlx.core.vocab import CHUNK_KINDS, FAULT_CODES, RECORD_KINDS, SHORT_KINDS, Token, chunk_value, vocab_for

def lane_list(mask: int, lanes: int = 4) -> str:
    return ",".join(str(lane) for lane in range(lanes) if mask >> lane & 1) or "none"


@dataclass
class Line:
    """One line of the launch pane: ``style`` names the token kind (see app.tcss/launch pane)."""

    index: int  # position of the (header) token among the generated tokens; -1 for prompt lines
    token_id: int | None
    text: str  # the token, e.g. "EXEC(3, 0, 7)"
    meaning: str
    kind: str
    chunks: tuple[int, ...] = ()  # chunk values received so far (records)
    value: int | None = None  # the joined 32-bit value once complete


@dataclass
class MachineState:
    """What the streamed records say about the machine (per thread block)."""

    program: Program
    machine: MachineConfig = DEFAULT_MACHINE
    ctaid: int = 0
    block: int | None = None
    warp: int | None = None
    mask: int = 0
    regs: dict = field(default_factory=dict)  # (warp, lane, reg) -> value
    float_regs: set = field(default_factory=set)  # the (warp, lane, reg) whose last write was a float
    preds: dict = field(default_factory=dict)  # (warp, lane) -> predicate bits
    memory: list[int] = field(default_factory=list)
    memory_source: str = "program (inputs)"
    warp_status: dict = field(default_factory=dict)  # warp -> text
    changed_regs: set = field(default_factory=set)
    changed_preds: set = field(default_factory=set)
    changed_words: set = field(default_factory=set)
    written_words: set = field(default_factory=set)
    stream_memory: list[int] | None = None  # memory as decoded from MEM records, kept after the launch
    finished: str | None = None  # "STOP" / "FAULT ..."

    def __post_init__(self):
        if not self.memory:
            mem = list(self.program.memory)
            self.memory = mem + [0] * (self.machine.mem_words - len(mem))

    @property
    def warps(self) -> int:
        lanes = self.machine.lanes
        return max(1, (self.program.block_dim + lanes - 1) // lanes)

    def registers_used(self) -> list[int]:
        """Register indices the program writes (the rows a VAL record can fill)."""
        used = {i.dst for b in self.program.blocks for i in b.instrs
                if i.dst is not None and not i.writes_pred and i.dst != 0}
        return sorted(used)

    def preds_used(self) -> int:
        return max(1, self.program.preds_used)

    def word_names(self) -> dict[int, str]:
        return self.program.word_names()


class LaunchDecoder:
    """Feeds on tokens, yields (new or replaced) lines and keeps the :class:`MachineState`."""

    def __init__(self, program: Program, machine: MachineConfig = DEFAULT_MACHINE):
        self.program = program
        self.machine = machine
        self.vocab = vocab_for(machine)
        self.state = MachineState(program, machine)
        self.lines: list[Line] = []
        self.count = 0  # generated tokens seen
        self.closed: Line | None = None  # the short record the last token ended, if any
        self.kinds: dict[str, int] = {}
        self._open: Line | None = None  # record awaiting chunks
        self._open_token: Token | None = None
        self._chunks: list[Token] = []

    # ------------------------------------------------------------------ prompt
    def prompt_lines(self, prompt: list[int]) -> list[Line]:
        """The prompt, summarized: geometry, ROM records, input records, GO."""
        v = self.vocab
        toks = [v[i] for i in prompt]
        dims = next((t for t in toks if t.kind == "DIMS"), None)
        grid = next((t for t in toks if t.kind == "GRID"), None)
        prog = [t for t in toks if t.kind == "PROG"]
        mems = [t for t in toks if t.kind == "MEM"]
        blocks = sorted({t.get("block") for t in prog})
        names = self.state.word_names()
        inputs = ", ".join(f"{names.get(t.get('addr'), 'w' + str(t.get('addr')))}" for t in mems[:8])
        if len(mems) > 8:
            inputs += ", ..."
        lines = [
            Line(-1, None, f"prompt: {len(prompt)} tokens", "the program and inputs, fed to the model", "PROMPT"),
            Line(-1, None, f"  {dims} {grid}", f"blockDim.x {dims.get('ntid') if dims else '?'}, "
                 f"gridDim.x {grid.get('nctaid') if grid else '?'}", "PROMPT"),
            Line(-1, None, f"  {len(prog)} PROG records", f"ROM: {len(blocks)} blocks x {v.pieces} pieces "
                 f"({len(prog) * 4} tokens)", "PROMPT"),
            Line(-1, None, f"  {len(mems)} MEM records", f"inputs: {inputs or 'none (all zero)'}", "PROMPT"),
            Line(-1, None, "  GO", "end of the prompt; the model writes the launch from here", "PROMPT"),
        ]
        self.lines.extend(lines)
        return lines

    # ------------------------------------------------------------------ tokens
    def feed(self, token_id: int, tok: Token) -> tuple[str, Line | None]:
        """One generated token -> ("new", line), ("replace", line) or ("none", None).

        A token after a short ``VAL``/``MEM`` record (header and ``C0``) completes it as well:
        ``closed`` is then that record's line, to be redrawn."""
        idx = self.count
        self.count += 1
        self.closed = None  # a short record this token ended (its line changed too)
        self.kinds[tok.kind] = self.kinds.get(tok.kind, 0) + 1
        st = self.state
        lanes = self.machine.lanes
        if tok.kind in CHUNK_KINDS and self._open is not None:
            self._chunks.append(tok)
            line = self._open
            line.chunks = line.chunks + (tok.get("value"),)
            if len(self._chunks) == 3:
                value = chunk_value(self._chunks)
                line.value = value
                line.meaning = self._complete(self._open_token, value)
                self._open = self._open_token = None
                self._chunks = []
            else:
                line.meaning = self._pending(self._open_token, line.chunks)
            return "replace", line
        # anything else ends the open record: a short one (its C0 alone) is complete, others unfinished
        if self._open is not None and self._open_token.kind in SHORT_KINDS and len(self._chunks) == 1:
            value = chunk_value(self._chunks)
            self._open.value = value
            self._open.meaning = self._complete(self._open_token, value)
            self.closed = self._open
        self._open = self._open_token = None
        self._chunks = []
        if tok.kind in ("EXEC", "CTA"):  # highlights show what the current step wrote
            st.changed_regs.clear()
            st.changed_preds.clear()
            st.changed_words.clear()
        if tok.kind == "EXEC":
            st.block, st.warp, st.mask = tok.get("block"), tok.get("warp"), tok.get("mask")
            blk = self.program.blocks[st.block] if st.block < len(self.program.blocks) else None
            body = "; ".join([str(i) for i in blk.instrs] + [str(blk.term)]) if blk is not None else "?"
            meaning = (f"B{st.block} w{st.warp} mask {mask_bits(st.mask, lanes)} (lanes {lane_list(st.mask, lanes)})"
                       f"  | {body}")
        elif tok.kind in RECORD_KINDS:
            line = Line(idx, token_id, str(tok), self._pending(tok, ()), tok.kind)
            self._open, self._open_token = line, tok
            self.lines.append(line)
            return "new", line
        elif tok.kind == "PVAL":
            lane, bits = tok.get("lane"), tok.get("bits")
            w = st.warp if st.warp is not None else 0
            st.preds[(w, lane)] = bits
            st.changed_preds.add((w, lane))
            n = self.state.preds_used()
            meaning = (f"w{w} lane {lane}: " + " ".join(f"p{p}={'T' if bits >> p & 1 else 'F'}" for p in range(n)))
        elif tok.kind == "CTA":
            st.ctaid = tok.get("ctaid")
            st.regs.clear()
            st.float_regs.clear()
            st.preds.clear()
            st.block = st.warp = None
            st.mask = 0
            meaning = f"thread block {st.ctaid} starts (ctaid.x = {st.ctaid})"
        elif tok.kind == "STOP":
            st.finished = "STOP"
            for w in range(st.warps):  # the last warps end with the launch: no WST record says so
                st.warp_status[w] = "done"
            meaning = "end of the launch"
        elif tok.kind == "FAULT":
            st.finished = f"FAULT {tok.get('code')}"
            meaning = FAULT_CODES.get(tok.get("code"), "fault")
        elif tok.kind in CHUNK_KINDS:
            meaning = f"chunk {tok.get('value')} outside a record"
        else:
            meaning = ""
        line = Line(idx, token_id, str(tok), meaning, tok.kind)
        self.lines.append(line)
        return "new", line

    def _pending(self, tok: Token, chunks: tuple[int, ...]) -> str:
        head = self._header_meaning(tok)
        got = " ".join(f"C{j}={c}" for j, c in enumerate(chunks))
        return f"{head}  {got} ..." if got else f"{head} ..."

    def _header_meaning(self, tok: Token) -> str:
        st = self.state
        w = st.warp if st.warp is not None else 0
        if tok.kind == "VAL":
            slot, lane = tok.get("slot"), tok.get("lane")
            reg = self._val_reg(slot)
            return f"slot {slot} lane {lane}: r{reg if reg is not None else '?'} of w{w}"
        if tok.kind == "VALU":
            slot = tok.get("slot")
            reg = self._val_reg(slot)
            lanes = lane_list(st.mask, self.machine.lanes)
            return f"slot {slot} lanes {lanes}: r{reg if reg is not None else '?'} of w{w}, the same in each"
        if tok.kind == "MEM":
            addr, item = tok.get("addr"), tok.get("item")
            who = "input" if item == self.vocab.input_item else \
                f"slot {item // self.machine.lanes} lane {item % self.machine.lanes}"
            name = st.word_names().get(addr, f"w{addr}")
            return f"mem[{addr}] {name} ({who})"
        if tok.kind == "ENT":
            return f"w{tok.get('warp')} stack[{tok.get('level')}] (item {tok.get('item')})"
        if tok.kind == "WST":
            return f"w{tok.get('warp')} status"
        if tok.kind == "PROG":
            return f"ROM B{tok.get('block')} piece {tok.get('piece')}"
        return ""

    def _val_instr(self, slot: int) -> Instr | None:
        """The instruction of the current step a ``VAL`` of ``slot`` reports (None: none writes a register)."""
        st = self.state
        if st.block is None or st.block >= len(self.program.blocks):
            return None
        instrs = self.program.blocks[st.block].instrs
        if slot >= len(instrs):
            return None
        ins = instrs[slot]
        return None if ins.dst is None or ins.writes_pred else ins

    def _val_reg(self, slot: int) -> int | None:
        ins = self._val_instr(slot)
        return None if ins is None else ins.dst

    def _complete(self, tok: Token, value: int) -> str:
        st = self.state
        head = self._header_meaning(tok)
        joined = f"= {to_signed(value)}" + (f" (0x{value:08x})" if value > 0xFFFF else "")
        if tok.kind in ("VAL", "VALU"):
            ins = self._val_instr(tok.get("slot"))
            w = st.warp if st.warp is not None else 0
            lanes = [tok.get("lane")] if tok.kind == "VAL" else \
                [lane for lane in range(self.machine.lanes) if st.mask >> lane & 1]
            for lane in lanes if ins is not None else ():
                cell = (w, lane, ins.dst)
                st.regs[cell] = value
                st.changed_regs.add(cell)
                (st.float_regs.add if ins.float_dst else st.float_regs.discard)(cell)
            if ins is not None and ins.float_dst:
                joined = f"= {float32_text(value)} (0x{value:08x})"
            return f"{head} {joined}"
        if tok.kind == "MEM":
            addr = tok.get("addr")
            if 0 <= addr < len(st.memory):
                st.memory[addr] = value
                st.changed_words.add(addr)
                st.written_words.add(addr)
            return f"{head} {joined}"
        if tok.kind == "ENT":
            return f"{head}: {records.describe_ent(value, self.machine)}"
        if tok.kind == "WST":
            text = records.describe_wst(value, self.machine)
            st.warp_status[tok.get("warp")] = text
            return f"{head}: {text}"
        return f"{head} {joined}"

    # ------------------------------------------------------------------ end
    def finish(self, memory: list[int]) -> None:
        """After the launch: memory as read from the model's recurrent state."""
        st = self.state
        st.stream_memory = list(st.memory)
        st.memory = list(memory) + [0] * (self.machine.mem_words - len(memory))
        st.memory_source = "recurrent state"
        st.changed_regs.clear()
        st.changed_preds.clear()
        st.changed_words.clear()
