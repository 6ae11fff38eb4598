"""The whole SIMT machine as a Qwen3.5 circuit: fetch, slots, control, emission.

Stages (docs/CIRCUIT.md, "Pass layout"), each a method of :class:`MachineCircuit`
adding gates (MLPs) and memory heads (DeltaNet mixers) to a :class:`CircuitPlan`:

``context``   the last EXEC (block, warp, mask), the launch geometry, the last record header
``fetch``     ROM row of the block, field decoders, register and predicate reads
``slot(s)``   operand mux, ALU families, memory read / atomics, guard merge (``compiler.slot``)
``control``   SIMT stack, warp scheduling, the next EXEC and the step's records (``compiler.control``)
``latch``     this step's results held in single-row heads for the emission passes (``compiler.emit``)
``emit``      the next token: VAL / PVAL / MEM / ENT / WST records, then EXEC, CTA, STOP or FAULT

``build`` runs them in this order; ``compiler.pipeline.compile_machine`` runs build,
finalize, schedule (and the fold for a dense shape). Each stage's gates and heads are
noted as its own on the layers they land in (``compiler.placement``).

Every pass runs every stage; only EXEC passes write latches, only record tokens write
registers and memory, so the other passes' datapath values are harmless.
"""

from __future__ import annotations

from qwengpu_mlx.core.encoding import (
    CMPS, MODES, OPCODES, PSRC_FWD, SLOT_BITS, SLOT_FIELDS, SRC_SCALED, TERM_KINDS, pfinal_piece, term_fields,
    term_piece,
)
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, SCALED_SPECIALS, MachineConfig
from qwengpu_mlx.core.vocab import CHUNK_BITS, CHUNK_SHIFT, ENT_ITEMS, vocab_for

from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.control import Control
from qwengpu_mlx.compiler.deltanet import CURRENT
from qwengpu_mlx.compiler.emit import EmitStage
from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS, Levels
from qwengpu_mlx.compiler.mlp import eq_terms
from qwengpu_mlx.compiler.placement import placing
from qwengpu_mlx.compiler.residual import ResidualLayout, Subspace
from qwengpu_mlx.compiler.schedule import ScheduleOutcome, schedule_plan
from qwengpu_mlx.compiler.sizing import QWEN35_2B
from qwengpu_mlx.compiler.slot import EARLY_OPNDS, PREDOPS, SlotStage
from qwengpu_mlx.compiler.tokens import TokenDims

MAX_LAYERS = 48
"""A sanity bound on the circuit's depth: the published machine needs 45 layers (the
published system's count); the large machine's memory address takes one MLP more per
slot (a two-stage thermometer), and its schedule 47."""
MLP_UNITS = QWEN35_2B.intermediate  # every MLP is spread to Qwen3.5-2B's width
LINEAR_HEADS = QWEN35_2B.linear_heads  # and heads towards its heads per layer
OPNDS = ("a", "b", "c", "d")

NARROW = Shape(hidden=1 << 17, intermediate=16384, linear_heads=80, key_dim=128, value_dim=64,
               attn_heads=1, kv_heads=1, head_dim=64)


def memory_heads_in(plan, names: list[str]) -> tuple[tuple[int, int], ...]:
    """(layer, head index) of the heads ``names`` in ``plan``, in the order named."""
    where = {h.name: (i, h.index) for i, lp in enumerate(plan.layers)
             for h in (lp.mixer.heads if lp.mixer is not None else [])}
    missing = [n for n in names if n not in where]
    if missing:
        raise LookupError(f"no head {missing[0]!r}")
    return tuple(where[n] for n in names)


class MachineCircuit(SlotStage, EmitStage):
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
    def memory_heads(self) -> tuple[tuple[int, int], ...]:
        """(layer, head index) of each memory head the host reads words from, in word order."""
        return memory_heads_in(self.plan, self.memory_head_names)

    def schedule(self, units: int = MLP_UNITS, heads: int = LINEAR_HEADS) -> ScheduleOutcome:
        """Spread gates and heads into later layers where they have slack (``schedule.schedule_plan``).

        Returns what happened (a machine whose critical layers cannot be brought under
        ``units`` keeps the stages' layers; ``describe()`` says it in words).
        """
        self.schedule_outcome = schedule_plan(self.plan, units, heads)
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
        self.ctx_ntid = self.alloc("ctx.ntid", t.dims_ntid.width)
        self.ctx_mask0 = self.alloc("ctx.mask0", m.lanes)
        S, N = m.slots_per_block, m.lanes
        self.ctx_hdr_val = self.alloc("ctx.hdr.val", S * N)  # VAL(s, l) one-hot
        self.ctx_hdr_mem = self.alloc("ctx.hdr.mem", self.vocab.input_item + 1)  # MEM item one-hot

        def single(name, key_dims, sources, out):
            """One single-row head per value dim's worth of bits (a 128-block one-hot needs two)."""
            width = self.plan.mixer(L).Dv // 2
            for part, start in enumerate(range(0, len(sources), width)):
                chunk = sources[start:start + width]
                h = self.head(L, name if part == 0 else f"{name}.{part}", 1, len(chunk))
                for d in key_dims:
                    h.key(0, d, CURRENT)
                for i, d in enumerate(chunk):
                    h.value_bit(i, d, CURRENT)
                    h.read_bit(i, out[start + i])
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
        self.ctx_hdr_vu = self.alloc("ctx.hdr.valu", 1)  # the last header was a VALU (its slot: ctx_hdr_vs)
        single("ctx.hdr", [t.kind["VAL"], t.kind["VALU"], t.kind["MEM"], t.kind["ENT"], t.kind["WST"]],
               list(t.val_slot.dims) + list(t.val_lane.dims) + list(t.mem_item.dims) + list(t.ent_item.dims)
               + list(t.wst_w.dims) + [t.kind["VALU"]],
               list(self.ctx_hdr_vs.dims) + list(self.ctx_hdr_vl.dims) + list(self.ctx_hdr_mem.dims)
               + list(self.ctx_hdr_ent.dims) + list(self.ctx_hdr_wst.dims) + list(self.ctx_hdr_vu.dims))

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
        self.tf = {name: [rom[tb * 32 + off + i] for i in range(w)] for name, (off, w) in term_fields(m).items()}
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
        # register-write lanes: VAL(s, l) writes lane l; VALU(s) every lane the last EXEC ran
        self.val_wlane = self.alloc("val.wlane", m.lanes)
        for lane in range(m.lanes):
            self.gate(L, f"val.wlane{lane}", [(t.val_lane[lane], 2), (t.kind["VALU"], 1), (self.ctx_m[lane], 1)], 2,
                      [(self.val_wlane[lane], 1)])
        # VAL(s, l) header currently open (for emission): slot x lane one-hot; VALU(s): slot one-hot
        for s in range(S):
            for lane in range(m.lanes):
                self.gate(L, f"hdr.val.s{s}l{lane}", [(self.ctx_hdr_vs[s], 1), (self.ctx_hdr_vl[lane], 1)], 2,
                          [(self.ctx_hdr_val[s * m.lanes + lane], 1)])
        self.ctx_first = self.alloc("ctx.mask.first", m.lanes)  # the first lane of the last EXEC's mask
        for lane in range(m.lanes):
            self.gate(L, f"mask.first{lane}", [(self.ctx_m[lane], lane + 1)] + [(self.ctx_m[k], -1) for k in range(lane)],
                      lane + 1, [(self.ctx_first[lane], 1)])
        self.ctx_hdr_valu = self.alloc("ctx.hdr.valu.slot", S)
        for s in range(S):
            self.gate(L, f"hdr.valu.s{s}", [(self.ctx_hdr_vs[s], 1), (self.ctx_hdr_vu[0], 1)], 2,
                      [(self.ctx_hdr_valu[s], 1)])
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
