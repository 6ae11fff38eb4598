"""The launch the model must write, derived from the reference interpreter's run.

The check does not ask "are the records the model chose to emit right?" but "is every
record the reference says must come back there, in order, and nothing else?". So this
module turns the reference trace into the complete expected token stream, segment by
segment: a thread block's start (``CTA(c)``, a ``WST`` record for each of its warps),
then per step its ``EXEC`` token and the records that go back down:

* ``VAL(s, l)`` for every active lane ``l`` and every slot ``s`` that is the block's
  last write of a live-out register (the value after the step: a lane whose guard
  failed keeps the old value); one ``VALU(s)`` instead when two lanes or more ran and
  all hold the same value; a ``VAL``/``VALU``/``MEM`` whose value fits 11 bits is
  header and ``C0`` when a later record of the step follows (``vocab.short_record``);
* ``PVAL(l, bits)`` for every active lane when the block writes a live-out predicate;
* ``MEM(item, addr)`` for each store of each lane, and once per atomically updated word
  (from the last lane that added to it), slot by slot;
* ``ENT(item, warp, level)`` for each SIMT stack entry a divergence pushed;
* ``WST(w)`` when warp ``w``'s status changed (the running warp popped, diverged,
  reached a barrier, exited lanes or finished while its thread block goes on; a
  waiting warp was released),

and at the end ``CTA(c+1)``, ``STOP`` or ``FAULT(code)``. Payload layouts come from
``records.py``; which registers are live-out from the program's own dataflow
(``encoding.live_out_registers``), the definition the ROM encoding also follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu_mlx.core.encoding import live_out_predicates, live_out_registers
from qwengpu_mlx.core.reference import EXIT_PC
from qwengpu_mlx.core.isa import Program
from qwengpu_mlx.core.machine import MachineConfig, to_signed
from qwengpu_mlx.core.records import describe_ent, describe_wst, ent_payload, mask_bits, wst_payload
from qwengpu_mlx.core.vocab import FAULT_CODES, ENT_ITEMS, chunk_value, short_record, vocab_for

ENT_ROLES = ("reconverge", "other", "taken")  # ENT item k carries the entry of role k
assert len(ENT_ROLES) == ENT_ITEMS


@dataclass
class ExpectedRecord:
    """One token or record (header + chunks) the launch must contain."""

    tokens: list[int]
    what: str  # e.g. "VAL(1, 2): lane 2 r5 = 7"
    lane: int | None = None


@dataclass
class Segment:
    """A thread block's start, one EXEC step, or the launch's end."""

    where: str  # e.g. "step 3 (thread block 0, B2, warp 1, mask 1111)"
    records: list[ExpectedRecord] = field(default_factory=list)
    step: int | None = None
    open_ended: bool = False  # a faulting step: its records are not compared

    @property
    def tokens(self) -> list[int]:
        return [t for r in self.records for t in r.tokens]


@dataclass
class _Shadow:
    """Registers and predicates as the model's state rows hold them, replayed from the trace.

    The rows are not cleared between thread blocks (the reference's files are); a
    correct program never reads a register or predicate its thread block did not write,
    except through a ``VAL``/``PVAL`` that reports a row as it stands."""

    regs: dict = field(default_factory=dict)  # (warp, lane, reg) -> value
    preds: dict = field(default_factory=dict)  # (warp, lane, pred) -> bool

    def apply(self, rec, preds_return: bool) -> None:
        """The step's writes as the model's state rows get them: a block's predicate
        writes come back (``PVAL``) only when it writes a live one, so the model's
        predicate file keeps its old bits for the dead ones a block wrote otherwise."""
        for lane, reg, value in rec.reg_writes:
            self.regs[(rec.warp, lane, reg)] = value
        for lane, p, value in rec.pred_writes if preds_return else ():
            self.preds[(rec.warp, lane, p)] = value


class LaunchExpectation:
    """Builds the expected segments of one launch (see the module docstring)."""

    def __init__(self, program: Program, machine: MachineConfig):
        self.p, self.m = program, machine
        self.v = vocab_for(machine)
        live_regs = live_out_registers(program.blocks)
        live_preds = live_out_predicates(program.blocks)
        self.returned = {b.index: _returned_registers(b, live_regs[b.index]) for b in program.blocks}
        self.pemit = {b.index: bool(_written_predicates(b) & live_preds[b.index]) for b in program.blocks}
        self.word_names = program.word_names()

    def record(self, header_id: int, value: int, what: str, lane: int | None = None) -> ExpectedRecord:
        return ExpectedRecord(self.v.record(header_id, value), what, lane)

    def token(self, kind: str, what: str = "", of_lane: int | None = None, **fields) -> ExpectedRecord:
        """A single-token record; ``of_lane``: the lane it reports on (``fields`` are the token's own)."""
        tid = self.v.id(kind, **fields)
        return ExpectedRecord([tid], what or str(self.v[tid]), of_lane)

    # -- a thread block's start

    def cta_start(self, ctaid: int) -> Segment:
        m, n = self.m, self.p.block_dim
        seg = Segment(f"start of thread block {ctaid}", [self.token("CTA", ctaid=ctaid)])
        for w in range(-(-n // m.lanes)):
            mask = (1 << min(m.lanes, n - w * m.lanes)) - 1
            value = wst_payload(m, state="ready", depth=0, exited=0, pc=0, mask=mask)
            seg.records.append(self.record(self.v.id("WST", warp=w), value,
                                           f"WST({w}): warp {w} {describe_wst(value, m)}"))
        return seg

    # -- one step

    def step(self, rec, shadow: _Shadow) -> Segment:
        seg = Segment(f"step {rec.step} (thread block {rec.ctaid}, B{rec.block}, warp {rec.warp}, "
                      f"mask {mask_bits(rec.mask, self.m.lanes)})", step=rec.step)
        seg.records.append(self.token("EXEC", block=rec.block, warp=rec.warp, mask=rec.mask))
        shadow.apply(rec, self.pemit[rec.block])
        seg.records += self.vals(rec, shadow) + self.pvals(rec, shadow) + self.mems(rec)
        seg.records += self.ents(rec) + self.wsts(rec)
        self.shorten(seg)
        return seg

    def shorten(self, seg: Segment) -> None:
        """``VAL``/``MEM`` records whose value fits one chunk, with another record after them, end at ``C0``."""
        for k, rec in enumerate(seg.records):
            head = self.v[rec.tokens[0]]
            if len(rec.tokens) > 1:
                value = chunk_value([self.v[t] for t in rec.tokens[1:]])
                if short_record(head.kind, value, later_record=k + 1 < len(seg.records)):
                    rec.tokens = self.v.record(rec.tokens[0], value, short=True)

    def vals(self, rec, shadow: _Shadow) -> list[ExpectedRecord]:
        """Per returned register: one ``VALU`` when two lanes or more ran and hold the same
        value (the model's register heads write it into every active lane), else a ``VAL`` per lane."""
        out = []
        for s, r in self.returned[rec.block]:
            values = {lane: shadow.regs.get((rec.warp, lane, r), 0) for lane in self._lanes(rec.mask)}
            if len(values) >= 2 and len(set(values.values())) == 1:
                value = next(iter(values.values()))
                out.append(self.record(self.v.id("VALU", slot=s), value,
                                       f"VALU({s}): r{r} = {to_signed(value)} in lanes {mask_bits(rec.mask, self.m.lanes)}"))
                continue
            for lane, value in values.items():
                out.append(self.record(self.v.id("VAL", slot=s, lane=lane), value,
                                       f"VAL({s}, {lane}): lane {lane} r{r} = {to_signed(value)}", lane))
        return out

    def pvals(self, rec, shadow: _Shadow) -> list[ExpectedRecord]:
        if not self.pemit[rec.block]:
            return []
        out = []
        for lane in self._lanes(rec.mask):
            bits = sum(1 << p for p in range(self.m.preds) if shadow.preds.get((rec.warp, lane, p), False))
            out.append(self.token("PVAL", f"PVAL({lane}, {bits}): lane {lane} predicates {bits:0{self.m.preds}b}",
                                  of_lane=lane, lane=lane, bits=bits))
        return out

    def mems(self, rec) -> list[ExpectedRecord]:
        N = self.m.lanes
        # an atomic's word comes back once, from the last lane of the slot that added to it
        last_atomic = {}
        for slot, lane, word, _, atomic in rec.mem_items:
            if atomic:
                last_atomic[(slot, word)] = lane
        out = []
        for slot, lane, word, value, atomic in rec.mem_items:
            if atomic and last_atomic[(slot, word)] != lane:
                continue
            item = slot * N + lane
            name = self.word_names.get(word, f"word {word}")
            out.append(self.record(self.v.id("MEM", item=item, addr=word), value,
                                   f"MEM({item}, {word}): slot {slot} lane {lane} "
                                   f"{'atomicAdd' if atomic else 'store'} {name} = {to_signed(value)}", lane))
        return out

    def ents(self, rec) -> list[ExpectedRecord]:
        out = []  # the reference pushes in ENT_ROLES order: item order
        for role, level, pc, rpc, mask in rec.pushes:
            item = ENT_ROLES.index(role)
            value = ent_payload(self.m, pc=pc, rpc=None if rpc == EXIT_PC else rpc, mask=mask)
            out.append(self.record(self.v.id("ENT", item=item, warp=rec.warp, level=level), value,
                                   f"ENT({item}, {rec.warp}, {level}): {role} entry {describe_ent(value, self.m)}"))
        return out

    def wsts(self, rec) -> list[ExpectedRecord]:
        after = rec.warps_after
        cta_done = all(w.state == "done" for w in after)
        changed = set(rec.released)
        if rec.event in ("pop", "diverge", "barrier") or (rec.event == "exit" and not cta_done):
            changed.add(rec.warp)
        out = []
        for w in sorted(changed):
            st = after[w]
            # the resume point is part of the record only when a barrier set or released it
            at_barrier = w in rec.released or (w == rec.warp and rec.event == "barrier")
            pc, mask = (st.pc, st.mask) if at_barrier and st.state != "done" else (0, 0)
            value = wst_payload(self.m, state=st.state, depth=st.depth, exited=st.exited, pc=pc, mask=mask)
            out.append(self.record(self.v.id("WST", warp=w), value,
                                   f"WST({w}): warp {w} {describe_wst(value, self.m)}"))
        return out

    # -- helpers

    def _lanes(self, mask: int) -> list[int]:
        return [lane for lane in range(self.m.lanes) if mask >> lane & 1]



def _returned_registers(block, live_out: set[int]) -> list[tuple[int, int]]:
    """(slot, register) of each slot that is the block's last write of a live-out register."""
    last = {ins.dst: s for s, ins in enumerate(block.instrs)
            if ins.dst is not None and not ins.writes_pred and ins.dst != 0}
    return [(s, r) for r, s in sorted(last.items(), key=lambda kv: kv[1]) if r in live_out]


def _written_predicates(block) -> set[int]:
    written = set()
    for ins in block.instrs:
        if ins.writes_pred and ins.dst is not None:
            written.add(ins.dst)
        if ins.pdst is not None:
            written.add(ins.pdst)
    return written


def expected_segments(program: Program, machine: MachineConfig, trace: list, *, fault: int | None = None,
                      inside_step: bool = False) -> list[Segment]:
    """Every segment of the launch the reference run ``trace`` implies.

    ``fault``: the FAULT code when the reference stopped the launch. A memory fault
    happens inside a step, which the trace then lacks (``inside_step``): that step is
    expected up to its EXEC token (what the model writes of it before FAULT is not
    compared); a deadlock is found after its step, which the trace holds.
    """
    ex = LaunchExpectation(program, machine)
    segs: list[Segment] = []
    shadow = _Shadow()  # the model's state rows: a thread block finds its warps' rows as the last one left them
    ctaid = None
    for rec in trace:
        if rec.ctaid != ctaid:
            ctaid = rec.ctaid
            segs.append(ex.cta_start(ctaid))
        segs.append(ex.step(rec, shadow))
    if fault is None:
        segs.append(Segment("end of the launch", [ex.token("STOP")]))
        return segs
    if inside_step:
        segs += _faulting_step(ex, trace)
    segs.append(Segment("end of the launch", [ex.token("FAULT", f"FAULT({fault}): {FAULT_CODES[fault]}",
                                                       code=fault)]))
    return segs


def _faulting_step(ex: LaunchExpectation, trace: list) -> list[Segment]:
    """The step a memory fault stopped: the next step of the trace's last one."""
    last = trace[-1] if trace else None
    segs = []
    if last is not None and last.next is not None:
        block, warp, mask = last.next
    else:  # the first step of a thread block: its start, then EXEC(0, 0, lanes of warp 0)
        segs.append(ex.cta_start(last.ctaid + 1 if last is not None else 0))
        block, warp, mask = 0, 0, (1 << min(ex.m.lanes, ex.p.block_dim)) - 1
    segs.append(Segment(f"the step that faulted (B{block}, warp {warp}, mask {mask_bits(mask, ex.m.lanes)})",
                        [ex.token("EXEC", block=block, warp=warp, mask=mask)], open_ended=True))
    return segs
