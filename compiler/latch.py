"""The latch stage: this step's results held in single-row heads for the emission passes.

An EXEC pass writes every record the step produces into latches (single-row heads keyed
by the EXEC token): each slot's register and memory values (read onto one 32-bit bus
while the last record header names them), its memory addresses, the final predicates,
the next token, the warp statuses and stack entries the control unit made. Every later
pass reads them, so the emit stage can walk the records one token per pass.
docs/CIRCUIT.md, "Pass layout", item 4.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.core.records import NEXT_KINDS, next_layout
from qwengpu_mlx.core.vocab import ENT_ITEMS

from qwengpu_mlx.compiler.context import Context
from qwengpu_mlx.compiler.control_late import StepRecords
from qwengpu_mlx.compiler.deltanet import CURRENT
from qwengpu_mlx.compiler.fetch import Fetch
from qwengpu_mlx.compiler.residual import BIT, Subspace
from qwengpu_mlx.compiler.slot import MEM_WORD_BITS
from qwengpu_mlx.compiler.wiring import CircuitWiring


@dataclass(frozen=True)
class Latches:
    """The dims the latch heads write: what the last EXEC step produced, held for its records."""

    value: Subspace  # the 32-bit bus: the value of the record the last header names
    mem_meta: dict  # (slot, lane) -> its memory word's digits, then the present bit
    pfin: Subspace  # the final predicates, lane by lane
    uniform: Subspace  # per slot: it left one value in every active lane (a VALU record)
    next: Subspace  # the next token, as ``records.next_layout`` lays it out
    next_cta: Subspace  # the next thread block's id
    wst: list  # per warp: its status record's bits, then the present bit
    ent: list  # per stack entry item: its bits, its level, then the present bit


class LatchStage:
    """The latch heads, given the context, the fetch, the step's records and where each slot ends."""

    def __init__(self, cw: CircuitWiring, ctx: Context, fetched: Fetch, records: StepRecords, slot_end: list):
        self.cw = cw  # the plan its heads go into
        self.ctx = ctx  # the running mask, the last record header
        self.fetch = fetched  # the first lane, the open VALU header
        self.records = records  # the step's next token, statuses, stack entries and final predicates
        self.slot_end = slot_end  # per slot: the first layer that sees its results

    def build(self, L: int, slots: list) -> tuple[Latches, int]:
        """Single-row heads written at EXEC passes, read at every pass; (the latches, the layer after them)."""
        m, rec = self.cw.m, self.records
        N = m.lanes
        L = self.cw.linear_at_or_after(L)
        value = self.cw.alloc("latch.value", 32, value_range=BIT)  # the bus of register and memory values
        mem_meta = {}
        uniform = [self.slot_uniform(s, io) for s, io in enumerate(slots)]
        early = self.memory_latches_early()
        for s, io in enumerate(slots):
            self.latch_slot_values(s, io, value)
            Ls = self.cw.linear_with_room(self.slot_end[s], N) if early else L
            for lane in range(N):
                mem_meta[(s, lane)], Lm = self.single_row_latch(
                    Ls, f"latch.memm.s{s}l{lane}", list(io.mem_word[lane].dims) + [io.mem_present[lane]])
                L = L if early else Lm
        pfin, L = self.single_row_latch(L, "latch.pfin", [d for lane in range(N) for d in rec.pfin[lane].dims])
        uniform, L = self.single_row_latch(L, "latch.uniform", uniform)
        next_bits = list(rec.next_block.dims) + list(rec.next_warp.dims) + list(rec.next_mask.dims)
        next_bits += [rec.next_kind[k] for k in NEXT_KINDS]
        assert len(next_bits) == next_layout(m).bits  # the latch holds the next token as ``records`` lays it out
        nxt, L = self.single_row_latch(L, "latch.next", next_bits)
        next_cta, L = self.single_row_latch(L, "latch.next_cta", list(rec.next_cta.dims))
        wst = []
        for w in range(m.max_warps):
            out, L = self.single_row_latch(L, f"latch.wst.w{w}", list(rec.wst[w].dims) + [rec.wst_present[w]])
            wst.append(out)
        ent = []
        for k in range(ENT_ITEMS):
            out, L = self.single_row_latch(L, f"latch.ent{k}", list(rec.ent[k].dims) + list(rec.ent_level[k].dims)
                                           + [rec.ent_present[k]])
            ent.append(out)
        return Latches(value, mem_meta, pfin, uniform, nxt, next_cta, wst, ent), L + 1

    def slot_uniform(self, s: int, io) -> int:
        """A dim that is 1 where slot ``s`` ran on two lanes or more and left the same value in each.

        Per pair of lanes and byte k, two gates test ``byte_k(res_a) - byte_k(res_b)`` for
        >= 0 and <= 0 (exact integer sums of bits) into the pair's count, 8 only when
        every byte is equal; a pair of active lanes with a smaller count is a mismatch
        (``9 m_a + 9 m_b - count >= 11``). Then one gate: no mismatch and two active
        lanes, ``sum(mask) - 5 sum(mismatch) >= 2``.
        """
        N, res, L = self.cw.m.lanes, io.res, self.slot_end[s]
        mismatches = []
        for a in range(N):
            for b in range(a + 1, N):
                count = self.cw.alloc(f"uniform.count.s{s}.{a}{b}", 1, value_range=(0.0, 8.0))[0]
                for k in range(4):
                    diff = [(res[a][8 * k + i], 2 ** i) for i in range(8)] + \
                           [(res[b][8 * k + i], -(2 ** i)) for i in range(8)]
                    self.cw.gate(L, f"uniform.ge.s{s}.{a}{b}k{k}", diff, 0, [(count, 1)])
                    self.cw.gate(L, f"uniform.le.s{s}.{a}{b}k{k}", [(d, -w) for d, w in diff], 0, [(count, 1)])
                bad = self.cw.alloc(f"uniform.mismatch.s{s}.{a}{b}", 1, value_range=BIT)[0]
                self.cw.gate(L + 1, f"uniform.mismatch.s{s}.{a}{b}",
                          [(self.ctx.mask[a], 9), (self.ctx.mask[b], 9), (count, -1)], 11, [(bad, 1)])
                mismatches.append(bad)
        uniform = self.cw.alloc(f"uniform.s{s}", 1, value_range=BIT)[0]
        self.cw.gate(L + 2, f"uniform.s{s}", [(self.ctx.mask[lane], 1) for lane in range(N)]
                  + [(bad, -5) for bad in mismatches], 2, [(uniform, 1)])
        return uniform

    def memory_latches_early(self) -> bool:
        """Latch each slot's memory address right after the slot, not with the step's other latches.

        With 8 warps the end-of-pass latches (12 memory addresses, 8 warp states, 3 stack
        entries, 4 more) are 27 heads that the layers before the emission cannot hold at
        Qwen3.5-2B's 16 per layer; the published machine's 23 fit, and keep their places
        (and its weights) as they were."""
        return self.cw.m.max_warps > 4 or self.cw.m.mem_words > 1 << MEM_WORD_BITS

    def single_row_latch(self, L: int, name: str, sources: list) -> tuple:
        """A head at the first linear layer from ``L`` with room that holds ``sources`` from the
        last EXEC pass; (its output dims, its layer)."""
        while not self.cw.has_room(L, 1, self.cw.plan.shape.linear_heads):
            L = self.cw.linear_at_or_after(L + 1)
        h = self.cw.head(L, name, 1, len(sources))
        out = self.cw.alloc(name, len(sources))
        h.key(0, self.cw.t.kind["EXEC"], CURRENT)
        for i, d in enumerate(sources):
            h.value_bit(i, d, CURRENT)
            h.read_bit(i, out[i])
        self.cw.one_row_reader(h)
        return out, L

    def latch_slot_values(self, s: int, io, value) -> None:
        """Slot ``s``'s register and memory values: one head per record, read into the 32-bit bus.

        Each head reads only while the last record header names it (its query is decoded
        from the header), so the others add exact zeros. They sit right after their slot,
        so the slot's results need not stay in the residual until the emission layers.
        """
        t, N = self.cw.t, self.cw.m.lanes
        for kind, srcs, hdrs in (("res", io.res, self.ctx.hdr_val), ("memv", io.mem_value, self.ctx.hdr_mem)):
            Ls = self.cw.linear_with_room(self.slot_end[s], N)
            for lane in range(N):
                src, hdr = srcs[lane], hdrs[s * N + lane]
                h = self.cw.head(Ls, f"latch.{kind}.s{s}l{lane}", 1, len(src))
                h.key(0, t.kind["EXEC"], CURRENT)
                for i, d in enumerate(src.dims):
                    h.value_bit(i, d, CURRENT)
                    h.read_bit(i, value[i])
                # a VALU(s) record carries the first active lane's value, the same in every active lane
                if kind == "res":
                    terms = [(hdr, 2), (self.fetch.hdr_valu_slot[s], 1), (self.fetch.first_lane[lane], 1)]
                    self.cw.decoded_query(h, 0, terms, 2)
                else:
                    self.cw.decoded_query(h, 0, [(hdr, 1)], 1)
