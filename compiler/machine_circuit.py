"""The whole SIMT machine as a Qwen3.5 circuit: fetch, slots, control, emission.

Stages (docs/CIRCUIT.md, "Pass layout"), each a method of :class:`MachineCircuit`
adding gates (MLPs) and memory heads (DeltaNet mixers) to a :class:`CircuitPlan`:

``context``   the last EXEC (block, warp, mask), the launch geometry, the last record header
``fetch``     ROM row of the block, field decoders, register and predicate reads
``slot(s)``   operand mux, ALU families, memory read / atomics, guard merge
``control``   branch outcome and the next EXEC (uniform control flow, one warp)
``latch``     this step's results held in single-row heads for the emission passes
``emit``      the next token: VAL / PVAL / MEM records, then EXEC or STOP

Every pass runs every stage; only EXEC passes write latches, only record tokens write
registers and memory, so the other passes' datapath values are harmless.
"""

from __future__ import annotations

from dataclasses import dataclass


from qwengpu_mlx.encoding import (
    CMPS, MODES, OPCODES, PSRC_FILE, PSRC_FWD, PSRC_NONE, SLOT_BITS, SLOT_FIELDS, SRC_FWD, SRC_IMM,
    SRC_SCALED, SRC_SPECIAL, TERM_FIELDS, TERM_KINDS, pfinal_piece, term_piece,
)
from qwengpu_mlx.isa import Op
from qwengpu_mlx.machine import DEFAULT_MACHINE, SCALED_SPECIALS, SPECIAL_REGISTERS, MachineConfig
from qwengpu_mlx.vocab import CHUNK_BITS, CHUNK_SHIFT, vocab_for

from .alu_add import build_add_family
from .alu_logic import build_logic_family
from .alu_mul import build_multi_add, build_mul_family
from .alu_shfl import build_shfl
from .assemble import CircuitPlan, Shape
from .deltanet import CURRENT
from .levels import DEFAULT_LEVELS, Levels
from .mlp import eq_terms
from .placement import placing
from .residual import BIT, ResidualLayout, Subspace
from .schedule import ScheduleOutcome, schedule_plan
from .sizing import QWEN35_2B
from .control import LEVEL_BITS, Control
from .tokens import OUT_GAIN, TokenDims
from qwengpu_mlx.vocab import ENT_ITEMS
from qwengpu_mlx.records import NEXT_KINDS, ent_layout, next_layout, wst_layout

MAX_LAYERS = 45
MEM_WORD_BITS = 7  # binary digits of a memory word index
MLP_UNITS = QWEN35_2B.intermediate  # every MLP is spread to Qwen3.5-2B's width
LINEAR_HEADS = QWEN35_2B.linear_heads  # and heads towards its heads per layer
OPNDS = ("a", "b", "c", "d")
EARLY_OPNDS = ("a", "b", "c")  # read before the ALU; d (the destination's old value) just before the merge
PREDOPS = ("guard", "p0", "p1", "pold")


NARROW = Shape(hidden=1 << 17, intermediate=16384, linear_heads=80, key_dim=128, value_dim=64,
               attn_heads=1, kv_heads=1, head_dim=64)


@dataclass
class SlotIO:
    res: list  # per lane, 32-bit merged result
    pres: list  # per lane, merged predicate result dim
    executed: list  # per lane dim: active and guard true
    mem_present: list  # per lane dim
    mem_word: list  # per lane 7-bit word address Subspace
    mem_value: list  # per lane 32-bit value Subspace
    fault: int  # dim: a memory fault in this slot


class MachineCircuit:
    def __init__(self, machine: MachineConfig = DEFAULT_MACHINE, shape: Shape = NARROW,
                 levels: Levels = DEFAULT_LEVELS):
        self.m = machine
        self.vocab = vocab_for(machine)
        self.plan = CircuitPlan(shape, ResidualLayout(shape.hidden), levels)
        self.lay = self.plan.layout
        self.K = levels.K
        self.t = TokenDims(self.lay, machine, self.vocab)
        self.ONE = self.lay.ONE

    # ------------------------------------------------------------------ helpers

    def layer(self, i: int) -> int:
        while len(self.plan.layers) <= i:
            self.plan.new_layer()
        return i

    def linear_at_or_after(self, i: int) -> int:
        while not self.plan.shape.is_linear(i):
            i += 1
        return self.layer(i)

    def gate(self, layer: int, name: str, terms, theta, outputs):
        self.layer(layer)
        return self.plan.mlp(layer).gate(name, terms, theta, outputs)

    def alloc(self, name: str, width: int, **kw) -> Subspace:
        return self.lay.alloc(name, width, **kw)

    def head(self, layer: int, name: str, rows: int, bits: int):
        self.layer(layer)
        return self.plan.mixer(layer).head(name, rows, bits)

    def decoded_query(self, h, row: int, terms, theta: float) -> None:
        """Query channel ``row`` = SiLU(G (sum w x - (theta - 1/2))), decoded by the head itself.

        The sum is an integer over bits, so the channel is G/2 where it reaches theta and
        SiLU of at most -G/2, exactly 0, below: a one-hot query (or none) from binary
        fields, with no MLP gate and no residual dim per row. The threshold is written
        against the class-2 constant; ``CircuitPlan.finalize`` gives the head class-2
        copies of its other inputs, so the decision does not move with the signal ratio.
        """
        G = self.plan.levels.decode_gain
        for d, w in terms:
            h.query(row, d, G * w)
        h.query(row, self.lay.ONE2, -G * (theta - 0.5))

    def decoded_key(self, h, row: int, terms, theta: float, tap: int) -> None:
        """Key channel ``row`` decoded by the head's SiLU, as ``decoded_query``, from the token at ``tap``."""
        G = self.plan.levels.decode_gain
        for d, w in terms:
            h.key(row, d, tap, G * w)
        h.key(row, self.lay.ONE2, tap, -G * (theta - 0.5))

    def one_row_reader(self, h):
        h.query(0, self.ONE, 1.0 / self.K)

    @property
    def memory_head(self) -> tuple[int, int]:
        """(layer, head index) of the memory head the host reads words from."""
        for i, lp in enumerate(self.plan.layers):
            for h in (lp.mixer.heads if lp.mixer is not None else []):
                if h.name == self.memory_head_name:
                    return i, h.index
        raise LookupError(f"no head {self.memory_head_name!r}")

    def schedule(self, units: int = MLP_UNITS, heads: int = LINEAR_HEADS) -> ScheduleOutcome:
        """Spread gates and heads into later layers where they have slack (``schedule.schedule_plan``).

        Returns what happened (a machine whose critical layers cannot be brought under
        ``units`` keeps the stages' layers); ``self.scheduled`` says it in words.
        """
        self.schedule_outcome = schedule_plan(self.plan, units, heads)
        self.scheduled = self.schedule_outcome.describe()
        return self.schedule_outcome

    # ------------------------------------------------------------------ stages

    def stage(self, name: str):
        """``with mc.stage("fetch"):`` notes what the enclosed code places as that stage's (``placement``)."""
        return placing(self.plan, name)

    def build(self) -> CircuitPlan:
        """Every stage in turn, each at the earliest layers its inputs allow (module doc)."""
        m = self.m
        self.ctl = Control(self)
        with self.stage("context"):
            self.context(0)
        with self.stage("fetch"):
            self.fetch(1)
        with self.stage("control.state"):
            self.ctl.heads(1)
        with self.stage("control.early"):
            self.ctl.early(2)
        L = 2
        slots = []
        self.slot_end = []  # per slot: the first layer that sees its results
        for s in range(m.slots_per_block):
            if s:
                with self.stage(f"slot{s}.fetch"):
                    self.fetch_slot(s, L)
            with self.stage(f"slot{s}"):
                io, L = self.slot(s, L, slots)
            slots.append(io)
            self.slot_end.append(L)
        with self.stage("control.late"):
            L = self.ctl.late(L, slots)
        with self.stage("latch"):
            L = self.latch(L, slots)
        with self.stage("emit"):
            L = self.emit(L)
        if len(self.plan.layers) > MAX_LAYERS:
            raise ValueError(f"circuit needs {len(self.plan.layers)} layers > {MAX_LAYERS}")
        self.plan.vocab = self.vocab.names()
        self.plan.embedding_sparse = self.t.sparse_matrix(self.ONE, self.K)
        self.plan.final_norm_dims = self.t.out_dims
        return self.plan

    def context(self, L: int) -> None:
        """Single-row heads: last EXEC, launch geometry, last record header."""
        t, m = self.t, self.m
        self.ctx_b = self.alloc("ctx.block", m.rom_blocks)
        self.ctx_w = self.alloc("ctx.warp", m.max_warps)
        self.ctx_m = self.alloc("ctx.mask", m.lanes)
        self.ctx_ntid = self.alloc("ctx.ntid", 5)
        self.ctx_mask0 = self.alloc("ctx.mask0", m.lanes)
        S, N = m.slots_per_block, m.lanes
        self.ctx_hdr_val = self.alloc("ctx.hdr.val", S * N)  # VAL(s, l) one-hot
        self.ctx_hdr_mem = self.alloc("ctx.hdr.mem", self.vocab.input_item + 1)  # MEM item one-hot

        def single(name, key_dims, sources, out):
            h = self.head(L, name, 1, len(sources))
            for d in key_dims:
                h.key(0, d, CURRENT)
            for i, d in enumerate(sources):
                h.value_bit(i, d, CURRENT)
                h.read_bit(i, out[i])
            self.one_row_reader(h)

        single("ctx.exec.block", [t.kind["EXEC"]], list(t.exec_b.dims), self.ctx_b)
        self.ctx_cta = self.alloc("ctx.ctaid", t.cta_c.width)  # binary
        self.ctx_grid = self.alloc("ctx.nctaid", t.grid_n.width)  # binary
        single("ctx.cta", [t.kind["CTA"]], list(t.cta_c.dims), list(self.ctx_cta.dims))
        single("ctx.grid", [t.kind["GRID"]], list(t.grid_n.dims), list(self.ctx_grid.dims))
        self.ctx_phase = self.alloc("ctx.phase_cta", 1)  # the last of EXEC/CTA was a CTA
        single("ctx.phase", [t.kind["EXEC"], t.kind["CTA"]], [t.kind["CTA"]], list(self.ctx_phase.dims))
        self.ctx_phase = self.ctx_phase[0]
        single("ctx.exec.wm", [t.kind["EXEC"]], list(t.exec_w.dims) + list(t.exec_m.dims),
               list(self.ctx_w.dims) + list(self.ctx_m.dims))
        single("ctx.dims", [t.kind["DIMS"]], list(t.dims_ntid.dims) + list(t.dims_mask0.dims),
               list(self.ctx_ntid.dims) + list(self.ctx_mask0.dims))
        # VAL header: slot x lane one-hot is an AND: the head stores slot and lane, the
        # fetch MLP combines them; MEM header: item one-hot
        self.ctx_hdr_vs = self.alloc("ctx.hdr.val.slot", S)
        self.ctx_hdr_vl = self.alloc("ctx.hdr.val.lane", N)
        self.ctx_hdr_ent = self.alloc("ctx.hdr.ent", ENT_ITEMS)
        self.ctx_hdr_wst = self.alloc("ctx.hdr.wst", m.max_warps)
        single("ctx.hdr", [t.kind["VAL"], t.kind["MEM"], t.kind["ENT"], t.kind["WST"]],
               list(t.val_slot.dims) + list(t.val_lane.dims) + list(t.mem_item.dims) + list(t.ent_item.dims)
               + list(t.wst_w.dims),
               list(self.ctx_hdr_vs.dims) + list(self.ctx_hdr_vl.dims) + list(self.ctx_hdr_mem.dims)
               + list(self.ctx_hdr_ent.dims) + list(self.ctx_hdr_wst.dims))

    def read_rom(self, L: int, name: str, pieces: dict[int, list[int]]) -> dict[int, int]:
        """ROM heads at layer ``L`` (query: ctx.block), one per piece, reading the listed bits.

        Every head keeps its own copy of the program (the PROG records write them all), so a
        slot's fields can be read just before the slot instead of all at the start: the
        raw bits then stay in the residual for a few layers, not for the whole pass.
        Returns ROM bit position (piece * 32 + bit) -> residual dim.
        """
        m, t = self.m, self.t
        dims = {}
        for p, bits in pieces.items():
            h = self.head(L, f"{name}.piece{p}", m.rom_blocks, 32)
            out = self.alloc(f"{name}.piece{p}", len(bits))
            for b in range(m.rom_blocks):
                # key row b from the PROG(block, piece) header 3 tokens back, decoded by the SiLU
                bt, bth = eq_terms(t.prog_block.dims, b)
                pt, pth = eq_terms(t.prog_piece.dims, p)
                self.decoded_key(h, b, bt + pt + [(t.kind["PROG"], 1)], bth + pth + 1, tap=0)
                h.query(b, self.ctx_b[b])
            for j in range(3):
                for i in range(CHUNK_BITS[j]):
                    h.value_bit(CHUNK_SHIFT[j] + i, t.chunk[j][i], tap=1 + j)
            for k, i in enumerate(bits):
                h.read_bit(i, out[k])
                dims[p * 32 + i] = out[k]
        return dims

    @staticmethod
    def slot_positions(s: int, names=None) -> dict[int, list[int]]:
        """piece -> ROM bit positions in it of slot ``s``'s fields (``names``: only those)."""
        out: dict[int, list[int]] = {}
        for name, (off, w) in SLOT_FIELDS.items():
            if names is None or name in names:
                for i in range(w):
                    pos = s * SLOT_BITS + off + i
                    out.setdefault(pos // 32, []).append(pos % 32)
        return {p: sorted(b) for p, b in sorted(out.items())}

    def slot_fields(self, s: int, rom: dict[int, int], names=None) -> dict[str, list[int]]:
        """Field name -> its bits' residual dims, from a ``read_rom`` map."""
        return {name: [rom[s * SLOT_BITS + off + i] for i in range(w)]
                for name, (off, w) in SLOT_FIELDS.items() if names is None or name in names}

    def decode_slot(self, s: int, L: int) -> None:
        """Slot ``s``'s field decoders (MLP of layer ``L``): op, cmp, mode, source one-hots."""
        m, f = self.m, self.f[s]
        ops = {}
        for code, op in enumerate(OPCODES):
            if op is None:
                continue
            d = self.alloc(f"dec.s{s}.op.{op.value}", 1)[0]
            terms, th = eq_terms(f["op"], code)
            self.gate(L, f"dec.s{s}.op{code}", terms, th, [(d, 1)])
            ops[op] = d
        for name, values in (("cmp", CMPS), ("mode", MODES)):
            sp = self.alloc(f"dec.s{s}.{name}", len(values))
            for code in range(len(values)):
                terms, th = eq_terms(f[name], code)
                self.gate(L, f"dec.s{s}.{name}{code}", terms, th, [(sp[code], 1)])
            ops[name] = sp
        self.op[s] = ops
        srcs = {}
        for X in OPNDS:
            sp = self.alloc(f"dec.s{s}.src_{X}", 32)  # one-hot over the 5-bit code
            for code in range(1, SRC_SCALED + len(SCALED_SPECIALS)):
                terms, th = eq_terms(f[f"src_{X}"], code)
                self.gate(L, f"dec.s{s}.src_{X}{code}", terms, th, [(sp[code], 1)])
            srcs[X] = sp
        self.src[s] = srcs
        ps = {}
        for X in PREDOPS:
            sp = self.alloc(f"dec.s{s}.{X}", 16)
            for code in range(0, PSRC_FWD + m.slots_per_block):
                terms, th = eq_terms(f[X], code)
                self.gate(L, f"dec.s{s}.{X}{code}", terms, th, [(sp[code], 1)])
            ps[X] = sp
        self.psrc[s] = ps

    def fetch_slot(self, s: int, Lm: int) -> None:
        """Read and decode slot ``s``'s fields (s > 0) just below its register reads at ``Lm``."""
        R = self.free_linear_layer(Lm, len(EARLY_OPNDS) * self.m.lanes)
        rest = [name for name in SLOT_FIELDS if name != "dst"]  # dst: read at the start (``fetch``)
        pieces = self.slot_positions(s, rest)
        Lr = self.free_linear_layer(R - 1, len(pieces))
        self.f[s].update(self.slot_fields(s, self.read_rom(Lr, f"rom.s{s}", pieces), rest))
        self.decode_slot(s, Lr)

    def fetch(self, L: int) -> None:
        """ROM read (query: ctx.block), field decoders, register/predicate write keys.

        Slot 0, the terminator and the final predicates are read here; later slots only
        their destinations (every slot's register-write key needs them from the start),
        the rest in ``fetch_slot``.
        """
        m, t = self.m, self.t
        S = m.slots_per_block
        early = self.slot_positions(0)
        for s in range(1, S):
            for p, bits in self.slot_positions(s, ("dst",)).items():
                early.setdefault(p, []).extend(bits)
        tb, pb = term_piece(m), pfinal_piece(m)
        for p in (tb, pb):
            early[p] = list(range(32))
        rom = self.read_rom(L, "rom", {p: sorted(set(b)) for p, b in sorted(early.items())})
        self.f = [self.slot_fields(0, rom)] + [self.slot_fields(s, rom, ("dst",)) for s in range(1, S)]
        self.tf = {name: [rom[tb * 32 + off + i] for i in range(w)] for name, (off, w) in TERM_FIELDS.items()}
        self.pfinal = [[rom[pb * 32 + 4 * p + i] for i in range(4)] for p in range(m.preds)]
        self.op, self.src, self.psrc = [None] * S, [None] * S, [None] * S
        self.decode_slot(0, L)
        # terminator and pfinal decoders
        self.t_kind = {}
        for code, kind in enumerate(TERM_KINDS):
            d = self.alloc(f"dec.term.{kind.value}", 1)[0]
            terms, th = eq_terms(self.tf["kind"], code)
            self.gate(L, f"dec.term{code}", terms, th, [(d, 1)])
            self.t_kind[kind] = d
        self.t_pred = self.alloc("dec.term.pred", 16)
        for code in range(0, PSRC_FWD + m.slots_per_block):
            terms, th = eq_terms(self.tf["pred"], code)
            self.gate(L, f"dec.term.pred{code}", terms, th, [(self.t_pred[code], 1)])
        self.t_pfinal = []
        for p in range(m.preds):
            sp = self.alloc(f"dec.pfinal{p}", 16)
            for code in range(0, PSRC_FWD + m.slots_per_block):
                terms, th = eq_terms(self.pfinal[p], code)
                self.gate(L, f"dec.pfinal{p}.{code}", terms, th, [(sp[code], 1)])
            self.t_pfinal.append(sp)
        # register-write keys: VAL(s, l) header -> row (w, dst of slot s) in lane l's heads.
        # The MLP picks the destination of the slot the header names (4 dims); the heads'
        # own SiLU decodes (dst, warp, lane) into the one-hot key (``decoded_key``).
        self.val_dst = self.alloc("val.dst", len(self.f[0]["dst"]))
        for s in range(S):
            for i, d in enumerate(self.f[s]["dst"]):
                self.gate(L, f"val.dst.s{s}b{i}", [(t.val_slot[s], 1), (d, 1)], 2, [(self.val_dst[i], 1)])
        # predicate-write keys: PVAL(l) -> row w in lane l's predicate heads
        self.pkey = [self.alloc(f"pkey.lane{lane}", m.max_warps) for lane in range(m.lanes)]
        for lane in range(m.lanes):
            for w in range(m.max_warps):
                self.gate(L, f"pkey.l{lane}w{w}", [(t.pval_lane[lane], 1), (self.ctx_w[w], 1)], 2,
                          [(self.pkey[lane][w], 1)])
        # VAL(s, l) header currently open (for emission): slot x lane one-hot
        for s in range(S):
            for lane in range(m.lanes):
                self.gate(L, f"hdr.val.s{s}l{lane}", [(self.ctx_hdr_vs[s], 1), (self.ctx_hdr_vl[lane], 1)], 2,
                          [(self.ctx_hdr_val[s * m.lanes + lane], 1)])
        # predicate file reads (layer L+1 mixer)
        Lp = self.linear_at_or_after(L + 1)
        self.pfile = []
        for lane in range(m.lanes):
            h = self.head(Lp, f"pfile.lane{lane}", m.max_warps, m.preds)
            out = self.alloc(f"pfile.lane{lane}", m.preds)
            for w in range(m.max_warps):
                h.key(w, self.pkey[lane][w], CURRENT)
                h.query(w, self.ctx_w[w])
            for i in range(m.preds):
                h.value_bit(i, t.pval_bits[i], CURRENT)
                h.read_bit(i, out[i])
            self.pfile.append(out)

    def _has_room(self, L: int, need: int, cap: int) -> bool:
        """Layer ``L`` (a linear one) takes ``need`` more heads under ``cap``."""
        self.layer(L)
        mixer = self.plan.layers[L].mixer
        return (len(mixer.heads) if mixer else 0) + need <= cap

    def linear_with_room(self, lo: int, need: int) -> int:
        """The first linear layer at or after ``lo`` with ``need`` free heads (under the 2B head count)."""
        L = self.linear_at_or_after(lo)
        while not self._has_room(L, need, min(self.plan.shape.linear_heads, LINEAR_HEADS)):
            L = self.linear_at_or_after(L + 1)
        return L

    def free_linear_layer(self, hi: int, need: int, lo: int = 2) -> int:
        """The latest linear layer in [lo, hi] with ``need`` free heads."""
        for L in range(hi, lo - 1, -1):
            if self.plan.shape.is_linear(L) and self._has_room(L, need, self.plan.shape.linear_heads):
                return L
        raise ValueError(f"no linear layer in {lo}..{hi} has {need} free heads")

    def register_reads(self, s: int, layer: int, opnds=EARLY_OPNDS) -> dict:
        """Lane heads holding the register file; read operands ``opnds`` of slot s by ``layer``."""
        m, t = self.m, self.t
        R = m.regs
        outs = {}
        L = self.free_linear_layer(layer, len(opnds) * m.lanes)
        for X in opnds:
            for lane in range(m.lanes):
                h = self.head(L, f"reg.s{s}.{X}.lane{lane}", m.max_warps * R, 32)
                out = self.alloc(f"opnd.s{s}.{X}.lane{lane}", 32, value_range=BIT)
                for w in range(m.max_warps):
                    for r in range(1, R):  # row 0 reads 0: never written, never read
                        terms, th = eq_terms(self.val_dst.dims, r)
                        self.decoded_key(h, w * R + r, terms + [(t.val_lane[lane], 1), (self.ctx_w[w], 1)],
                                         th + 2, tap=0)
                        terms, th = eq_terms(self.f[s][f"src_{X}"], r)
                        self.decoded_query(h, w * R + r, terms + [(self.ctx_w[w], 1)], th + 1)
                for j in range(3):
                    for i in range(CHUNK_BITS[j]):
                        h.value_bit(CHUNK_SHIFT[j] + i, t.chunk[j][i], tap=1 + j)
                for i in range(32):
                    h.read_bit(i, out[i])
                outs[(X, lane)] = out
        return outs

    def special_bit(self, name: str, lane: int, bit: int) -> list:
        """Terms giving bit ``bit`` of a special register for ``lane`` (linear in dims)."""
        m = self.m
        lb = m.lane_bits
        if name == "laneid":
            return [(self.ONE, 1.0 / self.K)] if lane >> bit & 1 else []
        if name == "warpid":
            return [(self.ctx_w[w], 1) for w in range(m.max_warps) if w >> bit & 1]
        if name == "tid.x":
            if bit < lb:
                return [(self.ONE, 1.0 / self.K)] if lane >> bit & 1 else []
            return [(self.ctx_w[w], 1) for w in range(m.max_warps) if w >> (bit - lb) & 1]
        if name == "tid.x*4":
            return self.special_bit("tid.x", lane, bit - 2) if bit >= 2 else []
        if name == "ntid.x":
            return [(self.ctx_ntid[bit], 1)] if bit < 5 else []
        if name == "nctaid.x":
            return [(self.ctx_grid[bit], 1)] if bit < self.ctx_grid.width else []
        if name == "ctaid.x":
            return [(self.ctx_cta[bit], 1)] if bit < self.ctx_cta.width else []
        raise KeyError(name)

    def operand_mux(self, s: int, L: int, opnd: dict, prev: list) -> None:
        """Operands that are no register (MLP of ``L``): immediates, specials, forwarded results."""
        f, src = self.f[s], self.src[s]
        for (X, lane), out in opnd.items():
            sel = src[X]
            for i in range(32):
                self.gate(L, f"mux.s{s}{X}l{lane}.imm{i}", [(sel[SRC_IMM], 1), (f["imm"][i], 1)], 2, [(out[i], 1)])
                specials = [(SRC_SPECIAL + k, nm) for k, nm in enumerate(SPECIAL_REGISTERS)]
                specials += [(SRC_SCALED + k, nm) for k, nm in enumerate(SCALED_SPECIALS)]
                for code, name in specials:
                    terms = self.special_bit(name, lane, i)
                    if terms:
                        self.gate(L, f"mux.s{s}{X}l{lane}.sp{code}b{i}", [(sel[code], 1)] + terms, 2,
                                  [(out[i], 1)])
                for k, pv in enumerate(prev):
                    self.gate(L, f"mux.s{s}{X}l{lane}.fwd{k}b{i}", [(sel[SRC_FWD + k], 1), (pv.res[lane][i], 1)], 2,
                              [(out[i], 1)])

    def slot(self, s: int, Lm: int, prev: list) -> tuple[SlotIO, int]:
        m = self.m
        N = m.lanes
        f, op, psrc = self.f[s], self.op[s], self.psrc[s]
        opnd = self.register_reads(s, Lm)
        self.operand_mux(s, Lm, opnd, prev)
        # predicate operands (value after negation)
        pval = {}
        for X in PREDOPS:
            for lane in range(N):
                d = self.alloc(f"pop.s{s}.{X}.lane{lane}", 1, value_range=BIT)[0]
                sel = psrc[X]
                neg = f.get(f"{X}_neg", [None])[0]
                sources = [(PSRC_FILE + i, self.pfile[lane][i]) for i in range(m.preds)]
                sources += [(PSRC_FWD + k, pv.pres[lane]) for k, pv in enumerate(prev)]
                for code, dim in sources:
                    if neg is None:
                        self.gate(Lm, f"pop.s{s}{X}l{lane}c{code}", [(sel[code], 1), (dim, 1)], 2, [(d, 1)])
                    else:
                        self.gate(Lm, f"pop.s{s}{X}l{lane}c{code}p", [(sel[code], 1), (dim, 1), (neg, -1)], 2, [(d, 1)])
                        self.gate(Lm, f"pop.s{s}{X}l{lane}c{code}n", [(sel[code], 1), (dim, -1), (neg, 1)], 2, [(d, 1)])
                if X == "guard":  # no guard: true
                    self.gate(Lm, f"pop.s{s}guard.none.l{lane}", [(sel[PSRC_NONE], 1)], 1, [(d, 1)])
                pval[(X, lane)] = d
        # ---- ALU (from Lm + 1)
        A = Lm + 1
        alu = [self.alloc(f"alu.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        palu = [self.alloc(f"palu.s{s}.lane{lane}", 1, value_range=BIT)[0] for lane in range(N)]
        ends = []
        for lane in range(N):
            a, b, c = opnd[("a", lane)], opnd[("b", lane)], opnd[("c", lane)]
            ends.append(build_add_family(
                self.plan, A, name=f"add.s{s}l{lane}", a=a, b=b,
                op={"add": op[Op.ADD], "sub": op[Op.SUB], "neg": op[Op.NEG], "abs": op[Op.ABS],
                    "min": op[Op.MIN], "max": op[Op.MAX], "setp": op[Op.SETP]},
                signed=f["signed"][0], cmp={c_: op["cmp"][i] for i, c_ in enumerate(CMPS)},
                out=alu[lane], pout=palu[lane]))
            ends.append(build_mul_family(self.plan, A, name=f"mul.s{s}l{lane}", a=a, b=b, c=c,
                                         op={"mul": op[Op.MUL], "mad": op[Op.MAD]}, out=alu[lane]))
            ends.append(build_logic_family(
                self.plan, A, name=f"logic.s{s}l{lane}", a=a, b=b, p=pval[("p0", lane)],
                op={"mov": op[Op.MOV], "and": op[Op.AND], "or": op[Op.OR], "xor": op[Op.XOR],
                    "not": op[Op.NOT], "shl": op[Op.SHL], "shr": op[Op.SHR], "selp": op[Op.SELP]},
                signed=f["signed"][0], out=alu[lane]))
            # predicate logic
            p0, p1 = pval[("p0", lane)], pval[("p1", lane)]
            self.gate(A, f"pand.s{s}l{lane}", [(op[Op.PAND], 1), (p0, 1), (p1, 1)], 3, [(palu[lane], 1)])
            self.gate(A, f"por.s{s}l{lane}", [(op[Op.POR], 2), (p0, 1), (p1, 1)], 3, [(palu[lane], 1)])
            self.gate(A, f"pxor1.s{s}l{lane}", [(op[Op.PXOR], 1), (p0, 1), (p1, -1)], 2, [(palu[lane], 1)])
            self.gate(A, f"pxor2.s{s}l{lane}", [(op[Op.PXOR], 1), (p0, -1), (p1, 1)], 2, [(palu[lane], 1)])
            self.gate(A, f"pnot.s{s}l{lane}", [(op[Op.PNOT], 1), (p0, -1)], 1, [(palu[lane], 1)])
            self.gate(A, f"pmov.s{s}l{lane}", [(op[Op.PMOV], 1), (p0, 1)], 2, [(palu[lane], 1)])
        # lanes that do not exist in this warp are never shuffle sources
        member = self.alloc(f"shfl.member.s{s}", N)
        for j in range(N):
            for w in range(m.max_warps):
                self.gate(Lm, f"shfl.member.s{s}.{j}.w{w}", [(f["member"][j], 1), (self.ctx_w[w], 1),
                                                              (self.ctl.exist[w][j], 1)], 3, [(member[j], 1)])
        ends.append(build_shfl(
            self.plan, A, name=f"shfl.s{s}", vals=[opnd[("a", lane)] for lane in range(N)],
            b=[opnd[("b", lane)] for lane in range(N)], mode={mo: op["mode"][i] for i, mo in enumerate(MODES)},
            clamp=self._bits_space(f["clamp"]), segmask=self._bits_space(f["segmask"]),
            member=member, sel=op[Op.SHFL], outs=alu, pouts=palu))
        # ---- memory: word one-hot straight from a + offset (one layer), read, atomics
        # S = a[0:10] + offset (10-bit signed) is small and exact; the word is S / 4 when
        # S is in range, aligned and a has no bits above bit 9 (else: a fault).
        is_mem = self.alloc(f"ismem.s{s}", 1)[0]
        self.gate(Lm, f"ismem.s{s}", [(op[Op.LD], 1), (op[Op.ST], 1), (op[Op.ATOM_ADD], 1)], 1, [(is_mem, 1)])
        W = m.mem_words
        if W > 1 << MEM_WORD_BITS:
            raise ValueError(f"{W} memory words need more than {MEM_WORD_BITS} word-address bits")
        word = [self.alloc(f"memw.s{s}.lane{lane}", MEM_WORD_BITS, value_range=BIT) for lane in range(N)]
        valid = [self.alloc(f"memok.s{s}.lane{lane}", 1)[0] for lane in range(N)]  # 0 <= S < 4W
        aligned = [self.alloc(f"memal.s{s}.lane{lane}", 1)[0] for lane in range(N)]  # S % 4 == 0
        fault = self.alloc(f"fault.s{s}", 1)[0]
        BIG = 4096
        offb = f["offset"]
        # layer A: a thermometer [S >= 4w] for w = 0..W, written straight into the word's
        # binary digits: gate w adds bit_i(w) - bit_i(w - 1) to digit i, so the digits
        # telescope to floor(S / 4); gates 0 and W write the in-range bit. Only the
        # digits, the range bit and the alignment bit stay in the residual: the memory
        # head's own SiLU turns them into a one-hot query (below).
        for lane in range(N):
            a_ = opnd[("a", lane)]
            S_terms = [(a_[i], 2 ** i) for i in range(10)] + [(offb[i], 2 ** i) for i in range(9)] + [(offb[9], -512)]
            S_terms += [(a_[i], -2048) for i in range(10, 32)] + [(is_mem, BIG)]
            for w_ in range(W + 1):
                if w_ == 0:
                    outs = [(valid[lane], 1)]
                elif w_ == W:
                    outs = [(valid[lane], -1)]
                else:
                    outs = [(word[lane][i], (w_ >> i & 1) - ((w_ - 1) >> i & 1)) for i in range(MEM_WORD_BITS)]
                self.gate(A, f"memt.s{s}l{lane}w{w_}", S_terms, 4 * w_ + BIG, outs)
            # S % 4 == (a0 + 2 a1 + o0 + 2 o1) % 4, a sum in 0..6: aligned when it is 0 or 4
            low = [(a_[0], 1), (a_[1], 2), (offb[0], 1), (offb[1], 2)]
            self.gate(A, f"memal.s{s}l{lane}.zero", [(d, -c) for d, c in low], 0, [(aligned[lane], 1)])
            self.gate(A, f"memal.s{s}l{lane}.ge4", low, 4, [(aligned[lane], 1)])
            self.gate(A, f"memal.s{s}l{lane}.ge5", low, 5, [(aligned[lane], -1)])
        La = max(ends)
        # executed = active and guard
        executed = [self.alloc(f"exec.s{s}.lane{lane}", 1)[0] for lane in range(N)]
        for lane in range(N):
            self.gate(A, f"executed.s{s}l{lane}", [(self.ctx_m[lane], 1), (pval[("guard", lane)], 1)], 2,
                      [(executed[lane], 1)])
        Lr = self.linear_at_or_after(A + 1)
        memval = [self.alloc(f"memval.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        for lane in range(N):
            h = self.head(Lr, f"mem.s{s}.lane{lane}", W, 32)
            for w_ in range(W):
                terms, th = eq_terms(self.t.mem_addr.dims, w_)  # MEM(item, addr) header, decoded
                self.decoded_key(h, w_, terms + [(self.t.kind["MEM"], 1)], th + 1, tap=0)
                # query row w: the digits equal w, in range, aligned (decoded by the head's SiLU)
                terms, th = eq_terms(word[lane].dims, w_)
                self.decoded_query(h, w_, terms + [(valid[lane], 1), (aligned[lane], 1)], th + 2)
            for j in range(3):
                for i in range(CHUNK_BITS[j]):
                    h.value_bit(CHUNK_SHIFT[j] + i, self.t.chunk[j][i], tap=1 + j)
            for i in range(32):
                h.read_bit(i, memval[lane][i])
            if s == 0 and lane == 0:
                self.memory_head_name = h.name  # where the host reads memory from
        for lane in range(N):  # an executed memory op whose address is no word of memory
            self.gate(Lr, f"fault.s{s}l{lane}", [(executed[lane], 2), (is_mem, 2), (valid[lane], -1),
                                                  (aligned[lane], -1)], 3, [(fault, 1)])
        # LD result
        for lane in range(N):
            for i in range(32):
                self.gate(Lr, f"ld.s{s}l{lane}b{i}", [(op[Op.LD], 1), (memval[lane][i], 1)], 2, [(alu[lane][i], 1)])
        # atomics: same-word earlier executed lanes contribute their b. Word equality is
        # [Wk - Wl >= 0] and [Wl - Wk >= 0] on the digits (MLP A+1), then their AND (A+2).
        eqm = {}
        for lane in range(N):
            for k in range(lane):
                d = self.alloc(f"atom.eq.s{s}.{k}{lane}", 1)[0]
                half = self.alloc(f"atom.eqh.s{s}.{k}{lane}", 2)
                on = [(executed[k], 256), (op[Op.ATOM_ADD], 256), (valid[k], 256), (valid[lane], 256)]
                for j, sign in enumerate((1, -1)):
                    diff = [(word[k][i], sign * 2 ** i) for i in range(MEM_WORD_BITS)]
                    diff += [(word[lane][i], -sign * 2 ** i) for i in range(MEM_WORD_BITS)]
                    self.gate(A + 1, f"atom.eq.s{s}.{k}{lane}.h{j}", diff + on, 1024, [(half[j], 1)])
                self.gate(A + 2, f"atom.eq.s{s}.{k}{lane}", [(half[0], 1), (half[1], 1)], 2, [(d, 1)])
                eqm[(k, lane)] = d
        Lq = max(Lr + 1, A + 3)
        later = [self.alloc(f"atom.later.s{s}.lane{lane}", 1)[0] for lane in range(N)]
        for lane in range(N):
            for k in range(lane + 1, N):
                self.gate(Lq, f"atom.later.s{s}.{lane}{k}", [(eqm[(lane, k)], 1), (executed[k], 1)], 2,
                          [(later[lane], 1)])
        old = [self.alloc(f"atom.old.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        new = [self.alloc(f"atom.new.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        is_atom = op[Op.ATOM_ADD]
        qends = []
        for lane in range(N):
            terms = [(memval[lane], None)] + [(opnd[("b", k)], eqm[(k, lane)]) for k in range(lane)]
            qends.append(build_multi_add(self.plan, Lq, name=f"atom.old.s{s}l{lane}", terms=terms,
                                         out=old[lane], enable=is_atom))
            qends.append(build_multi_add(self.plan, Lq, name=f"atom.new.s{s}l{lane}",
                                         terms=terms + [(opnd[("b", lane)], None)], out=new[lane], enable=is_atom))
        Lmg = max(qends + [La])
        # d, the destination's old value, only the merge reads: read it just below the merge,
        # unless it may come forwarded from earlier slots of the last slot (their results
        # would then stay in the residual through this slot's ALU)
        late_d = s < m.slots_per_block - 1 or not prev
        Ld = self.free_linear_layer(Lmg - 1, N, lo=Lm) if late_d else Lm
        d_opnd = self.register_reads(s, Ld, ("d",))
        self.operand_mux(s, Ld, d_opnd, prev)
        opnd.update(d_opnd)
        # ---- merge: result where the guard holds, the old value where it fails
        res = [self.alloc(f"res.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        pres = [self.alloc(f"pres.s{s}.lane{lane}", 1, value_range=BIT)[0] for lane in range(N)]
        mem_present = [self.alloc(f"mem.present.s{s}.lane{lane}", 1)[0] for lane in range(N)]
        mem_value = [self.alloc(f"mem.value.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        for lane in range(N):
            g = pval[("guard", lane)]
            d_ = opnd[("d", lane)]
            for i in range(32):
                self.gate(Lmg, f"merge.s{s}l{lane}b{i}", [(alu[lane][i], 1), (g, 1)], 2, [(res[lane][i], 1)])
                self.gate(Lmg, f"merge.s{s}l{lane}a{i}", [(old[lane][i], 1), (g, 1)], 2, [(res[lane][i], 1)])
                self.gate(Lmg, f"keep.s{s}l{lane}b{i}", [(d_[i], 1), (g, -1)], 1, [(res[lane][i], 1)])
                # memory item value: st stores b, atom stores the new value
                self.gate(Lmg, f"stv.s{s}l{lane}b{i}", [(op[Op.ST], 1), (opnd[("b", lane)][i], 1)], 2,
                          [(mem_value[lane][i], 1)])
                self.gate(Lmg, f"atv.s{s}l{lane}b{i}", [(new[lane][i], 1)], 1, [(mem_value[lane][i], 1)])
            self.gate(Lmg, f"pmerge.s{s}l{lane}", [(palu[lane], 1), (g, 1)], 2, [(pres[lane], 1)])
            self.gate(Lmg, f"pkeep.s{s}l{lane}", [(pval[("pold", lane)], 1), (g, -1)], 1, [(pres[lane], 1)])
            # an atomic's word goes back down once, from the last lane that added to it
            self.gate(Lmg, f"mempresent.s{s}l{lane}", [(op[Op.ST], 1), (op[Op.ATOM_ADD], 1), (executed[lane], 2),
                                                       (later[lane], -4)], 3, [(mem_present[lane], 1)])
        io = SlotIO(res, pres, executed, mem_present, word, mem_value, fault)
        return io, Lmg + 1

    def _bits_space(self, dims: list[int]) -> Subspace:
        """A Subspace view of consecutive field dims (fields are contiguous in a piece)."""
        if list(dims) == list(range(dims[0], dims[0] + len(dims))):
            return Subspace(f"field@{dims[0]}", dims[0], len(dims))
        raise ValueError("field crosses a ROM piece boundary")

    def latch(self, L: int, slots: list) -> int:
        """Single-row heads written at EXEC passes, read at every pass."""
        m, t, ctl = self.m, self.t, self.ctl
        N, S = m.lanes, m.slots_per_block
        L = self.linear_at_or_after(L)
        self.l_mem_meta = {}

        def latch(name, sources):
            nonlocal L
            while True:
                try:
                    h = self.head(L, name, 1, len(sources))
                    break
                except ValueError:
                    L = self.linear_at_or_after(L + 1)
            out = self.alloc(name, len(sources))
            h.key(0, t.kind["EXEC"], CURRENT)
            for i, d in enumerate(sources):
                h.value_bit(i, d, CURRENT)
                h.read_bit(i, out[i])
            self.one_row_reader(h)
            return out

        # register and memory values: one head per record, read only while the last record
        # header names it, all into one 32-bit bus; they sit right after their slot, so the
        # slot's results need not stay in the residual until the emission layers
        self.l_value = self.alloc("latch.value", 32, value_range=BIT)
        for s in range(S):
            io = slots[s]
            for kind, srcs, hdrs in (("res", io.res, self.ctx_hdr_val), ("memv", io.mem_value, self.ctx_hdr_mem)):
                Ls = self.linear_with_room(self.slot_end[s], N)
                for lane in range(N):
                    src, hdr = srcs[lane], hdrs[s * N + lane]
                    h = self.head(Ls, f"latch.{kind}.s{s}l{lane}", 1, len(src))
                    h.key(0, t.kind["EXEC"], CURRENT)
                    for i, d in enumerate(src.dims):
                        h.value_bit(i, d, CURRENT)
                        h.read_bit(i, self.l_value[i])
                    self.decoded_query(h, 0, [(hdr, 1)], 1)
            for lane in range(N):
                self.l_mem_meta[(s, lane)] = latch(f"latch.memm.s{s}l{lane}",
                                                   list(io.mem_word[lane].dims) + [io.mem_present[lane]])
        self.l_pfin = latch("latch.pfin", [d for lane in range(N) for d in self.pfin[lane].dims])
        next_bits = list(ctl.nb.dims) + list(ctl.nw.dims) + list(ctl.nm.dims) + [ctl.nk[k] for k in NEXT_KINDS]
        assert len(next_bits) == next_layout(m).bits  # the latch holds the next token as ``records`` lays it out
        self.l_next = latch("latch.next", next_bits)
        self.l_next_cta = latch("latch.next_cta", list(ctl.next_cta.dims))
        self.l_wst = [latch(f"latch.wst.w{w}", list(ctl.wst[w].dims) + [ctl.wst_present[w]])
                      for w in range(m.max_warps)]
        self.l_ent = [latch(f"latch.ent{k}", list(ctl.ent[k].dims) + list(ctl.ent_level[k].dims)
                            + [ctl.ent_present[k]]) for k in range(ENT_ITEMS)]
        return L + 1

    def emit(self, L: int) -> int:
        """Choose the next token from the current one and the latches (see module doc)."""
        m, t, ctl = self.m, self.t, self.ctl
        N, S, W = m.lanes, m.slots_per_block, m.max_warps
        ST, EN, NX = wst_layout(m), ent_layout(m), next_layout(m)  # what the latches hold
        G = OUT_GAIN
        emit_bits = [self.f[s]["emit"][0] for s in range(S)]
        pemit = self.tf["pemit"][0]
        ph = self.ctx_phase
        # items of an EXEC step, then of a thread block's start (CTA)
        items = [("VAL", s, lane) for s in range(S) for lane in range(N)]
        items += [("PVAL", None, lane) for lane in range(N)]
        items += [("MEM", s, lane) for s in range(S) for lane in range(N)]
        items += [("ENT", k, None) for k in range(ENT_ITEMS)]
        items += [("WST", w, None) for w in range(W)]
        n_exec = len(items)
        items += [("WSTI", w, None) for w in range(W)]
        n = len(items)
        E1 = L
        present = self.alloc("emit.present", n)
        cur = self.alloc("emit.cur", n)
        c2 = t.kind["C2"]
        for j, (kind, a, b) in enumerate(items):
            nph = [(ph, -1)]
            if kind == "VAL":
                s, lane = a, b
                self.gate(E1, f"em.pr{j}", [(emit_bits[s], 1), (self.ctx_m[lane], 1)] + nph, 2, [(present[j], 1)])
                self.gate(E1, f"em.cur{j}", [(c2, 1), (self.ctx_hdr_val[s * N + lane], 1)], 2, [(cur[j], 1)])
            elif kind == "PVAL":
                lane = b
                self.gate(E1, f"em.pr{j}", [(pemit, 1), (self.ctx_m[lane], 1)] + nph, 2, [(present[j], 1)])
                self.gate(E1, f"em.cur{j}", [(t.kind["PVAL"], 1), (t.pval_lane[lane], 1)], 2, [(cur[j], 1)])
            elif kind == "MEM":
                s, lane = a, b
                meta = self.l_mem_meta[(s, lane)]
                self.gate(E1, f"em.pr{j}", [(meta[MEM_WORD_BITS], 1)] + nph, 1, [(present[j], 1)])
                self.gate(E1, f"em.cur{j}", [(c2, 1), (self.ctx_hdr_mem[s * N + lane], 1)], 2, [(cur[j], 1)])
            elif kind == "ENT":
                self.gate(E1, f"em.pr{j}", [(self.l_ent[a][EN.bits + LEVEL_BITS], 1)] + nph, 1, [(present[j], 1)])
                self.gate(E1, f"em.cur{j}", [(c2, 1), (self.ctx_hdr_ent[a], 1)], 2, [(cur[j], 1)])
            elif kind == "WST":
                self.gate(E1, f"em.pr{j}", [(self.l_wst[a][ST.bits], 1)] + nph, 1, [(present[j], 1)])
                self.gate(E1, f"em.cur{j}", [(c2, 1), (self.ctx_hdr_wst[a], 1), (ph, -1)], 2, [(cur[j], 1)])
            else:  # WSTI: a thread block starts: every existing warp's initial status
                self.gate(E1, f"em.pr{j}", [(ctl.exist[a][0], 1), (ph, 1)], 2, [(present[j], 1)])
                self.gate(E1, f"em.cur{j}", [(c2, 1), (self.ctx_hdr_wst[a], 1), (ph, 1)], 3, [(cur[j], 1)])
        start_x = self.alloc("emit.start_exec", 1)[0]
        start_c = self.alloc("emit.start_cta", 1)[0]
        self.gate(E1, "em.start_x", [(t.kind["EXEC"], 1)], 1, [(start_x, 1)])
        self.gate(E1, "em.start_c", [(t.kind["CTA"], 1)], 1, [(start_c, 1)])
        # E2
        E2 = E1 + 1
        g = self.alloc("emit.g", n)
        for j in range(n):
            lo = 0 if j < n_exec else n_exec
            start = start_x if j < n_exec else start_c
            terms = [(present[j], 1), (start, 1)] + [(cur[k], 1) for k in range(lo, j)]
            self.gate(E2, f"em.g{j}", terms, 2, [(g[j], 1)])
        mid = self.alloc("emit.mid", 3)
        self.gate(E2, "em.mid0", [(t.kind[k], 1) for k in ("VAL", "MEM", "ENT", "WST")], 1, [(mid[0], 1)])
        self.gate(E2, "em.mid1", [(t.kind["C0"], 1)], 1, [(mid[1], 1)])
        self.gate(E2, "em.mid2", [(t.kind["C1"], 1)], 1, [(mid[2], 1)])
        live_x = self.alloc("emit.live_exec", 1)[0]
        live_c = self.alloc("emit.live_cta", 1)[0]
        self.gate(E2, "em.live_x", [(start_x, 1)] + [(cur[j], 1) for j in range(n_exec)], 1, [(live_x, 1)])
        self.gate(E2, "em.live_c", [(start_c, 1)] + [(cur[j], 1) for j in range(n_exec, n)], 1, [(live_c, 1)])
        # E3
        E3 = E2 + 1
        sel = self.alloc("emit.sel", n)
        for j in range(n):
            lo = 0 if j < n_exec else n_exec
            self.gate(E3, f"em.sel{j}", [(g[j], 1)] + [(g[k], -1) for k in range(lo, j)], 1, [(sel[j], 1)])
        nxt = self.alloc("emit.next", 1)[0]  # EXEC step finished: the latched next token
        first = self.alloc("emit.first", 1)[0]  # thread block start finished: EXEC(0, 0, lanes of warp 0)
        self.gate(E3, "em.next", [(live_x, 1)] + [(g[k], -1) for k in range(n_exec)], 1, [(nxt, 1)])
        self.gate(E3, "em.first", [(live_c, 1)] + [(g[k], -1) for k in range(n_exec, n)], 1, [(first, 1)])
        go = self.alloc("emit.go", 1)[0]
        self.gate(E3, "em.go", [(t.kind["GO"], 1)], 1, [(go, 1)])
        # E4: output code
        E4 = E3 + 1
        oc, of = t.out_class, t.out_fields

        def emit_class(name, kind, cond_terms, theta):
            outs = [(oc[kind], G)]
            for space in of.get(kind, {}).values():
                outs += [(d, -G) for d in space.dims]
            self.gate(E4, name, cond_terms, theta, outs)

        def emit_field(name, kind, field, bit, cond_terms, theta):
            if bit < of[kind][field].width:
                self.gate(E4, name, cond_terms, theta, [(of[kind][field][bit], 2 * G)])

        def const_field_bits(prefix, kind, field, value, cond):
            for i in range(of[kind][field].width):
                if value >> i & 1:
                    emit_field(f"{prefix}.{field}{i}", kind, field, i, [(cond, 1)], 1)

        for j, (kind, a, b) in enumerate(items):
            if kind == "VAL":
                emit_class(f"em.o{j}", "VAL", [(sel[j], 1)], 1)
                const_field_bits(f"em.o{j}", "VAL", "slot", a, sel[j])
                const_field_bits(f"em.o{j}", "VAL", "lane", b, sel[j])
            elif kind == "PVAL":
                emit_class(f"em.o{j}", "PVAL", [(sel[j], 1)], 1)
                const_field_bits(f"em.o{j}", "PVAL", "lane", b, sel[j])
                for i in range(m.preds):
                    emit_field(f"em.o{j}.bits{i}", "PVAL", "bits", i,
                               [(sel[j], 1), (self.l_pfin[b * m.preds + i], 1)], 2)
            elif kind == "MEM":
                emit_class(f"em.o{j}", "MEM", [(sel[j], 1)], 1)
                const_field_bits(f"em.o{j}", "MEM", "item", a * N + b, sel[j])
                meta = self.l_mem_meta[(a, b)]
                for i in range(MEM_WORD_BITS):
                    emit_field(f"em.o{j}.addr{i}", "MEM", "addr", i, [(sel[j], 1), (meta[i], 1)], 2)
            elif kind == "ENT":
                emit_class(f"em.o{j}", "ENT", [(sel[j], 1)], 1)
                const_field_bits(f"em.o{j}", "ENT", "item", a, sel[j])
                for i in range(of["ENT"]["warp"].width):
                    for w in range(W):
                        if w >> i & 1:
                            emit_field(f"em.o{j}.w{i}.{w}", "ENT", "warp", i, [(sel[j], 1), (self.ctx_w[w], 1)], 2)
                for i in range(LEVEL_BITS):
                    emit_field(f"em.o{j}.lv{i}", "ENT", "level", i, [(sel[j], 1), (self.l_ent[a][EN.bits + i], 1)], 2)
            else:  # WST / WSTI
                emit_class(f"em.o{j}", "WST", [(sel[j], 1)], 1)
                const_field_bits(f"em.o{j}", "WST", "warp", a, sel[j])
        # chunks of the open record: value bit of the item named by the last header

        def value_sources(bit):
            """Condition-and-value terms, one list per source of one payload bit."""
            out = [[(self.l_value[bit], 1)]]  # VAL and MEM records: the bus holds the named one
            for k in range(ENT_ITEMS):
                if bit < EN.bits:
                    out.append([(self.ctx_hdr_ent[k], 1), (self.l_ent[k][bit], 1)])
            for w in range(W):
                if bit < ST.bits:
                    out.append([(self.ctx_hdr_wst[w], 1), (ph, -1), (self.l_wst[w][bit], 1)])
                    # a thread block's start: every warp ready at depth 0, its existing lanes
                    if bit in (ST.ready[0], ST.depth[0]):
                        out.append([(self.ctx_hdr_wst[w], 1), (ph, 1), (self.ONE, 1.0 / self.K)])
                    elif ST.mask.offset <= bit < ST.mask.offset + ST.mask.width:
                        out.append([(self.ctx_hdr_wst[w], 1), (ph, 1), (ctl.exist[w][bit - ST.mask.offset], 1)])
            return out

        for c in range(3):
            kind = f"C{c}"
            emit_class(f"em.chunk{c}", kind, [(mid[c], 1)], 1)
            for i in range(CHUNK_BITS[c]):
                bit = CHUNK_SHIFT[c] + i
                for q, src in enumerate(value_sources(bit)):
                    th = 1 + sum(1 for _, w_ in src if w_ > 0)
                    emit_field(f"em.ch{c}.b{i}.{q}", kind, "value", i, [(mid[c], 1)] + src, th)
        # after the last record of an EXEC step: the latched next token
        nk = self.l_next
        K_EXEC, K_CTA, K_STOP = NX.EXEC[0], NX.CTA[0], NX.STOP[0]
        emit_class("em.exec", "EXEC", [(nxt, 1), (nk[K_EXEC], 1)], 2)
        for i in range(NX.block.width):
            emit_field(f"em.exec.b{i}", "EXEC", "block", i, [(nxt, 1), (nk[K_EXEC], 1), (nk[NX.block[i]], 1)], 3)
        for i in range(NX.warp.width):
            emit_field(f"em.exec.w{i}", "EXEC", "warp", i, [(nxt, 1), (nk[K_EXEC], 1), (nk[NX.warp[i]], 1)], 3)
        for lane in range(NX.mask.width):
            emit_field(f"em.exec.m{lane}", "EXEC", "mask", lane,
                       [(nxt, 1), (nk[K_EXEC], 1), (nk[NX.mask[lane]], 1)], 3)
        emit_class("em.cta", "CTA", [(nxt, 1), (nk[K_CTA], 1)], 2)
        for i in range(self.l_next_cta.width):
            emit_field(f"em.cta.c{i}", "CTA", "ctaid", i, [(nxt, 1), (nk[K_CTA], 1), (self.l_next_cta[i], 1)], 3)
        emit_class("em.stop", "STOP", [(nxt, 1), (nk[K_STOP], 1)], 2)
        for code in range(3):
            k = getattr(NX, f"FAULT{code}")[0]
            emit_class(f"em.fault{code}", "FAULT", [(nxt, 1), (nk[k], 1)], 2)
            for i in range(of["FAULT"]["code"].width):
                if code >> i & 1:
                    emit_field(f"em.fault{code}.c{i}", "FAULT", "code", i, [(nxt, 1), (nk[k], 1)], 2)
        # thread block start finished: warp 0 runs block 0 on its lanes
        emit_class("em.first.out", "EXEC", [(first, 1)], 1)
        for lane in range(N):
            emit_field(f"em.first.m{lane}", "EXEC", "mask", lane, [(first, 1), (ctl.exist[0][lane], 1)], 2)
        # GO: thread block 0 starts
        emit_class("em.go.out", "CTA", [(go, 1)], 1)
        return E4 + 1


def build_machine_circuit(machine: MachineConfig = DEFAULT_MACHINE, shape: Shape = NARROW) -> MachineCircuit:
    """The logical circuit, built, finalized and scheduled: ``pipeline.compile_machine``'s, kept for its callers."""
    from .pipeline import compile_machine  # the pipeline builds on this module

    return compile_machine(machine, shape, fold=False).circuit
