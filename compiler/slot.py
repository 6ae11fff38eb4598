"""The slot stage: one instruction of the block, for every lane, as gates and heads.

Register reads (lane heads holding the register file), the operand mux (immediates,
special registers, forwarded results of earlier slots), predicate operands, the ALU
families in parallel (``alu_add``, ``alu_mul``, ``alu_logic``, ``alu_shfl``), the memory
word from ``a + offset`` and its read, atomics, then the guard merge. docs/CIRCUIT.md,
"Pass layout", item 2, says where each part sits.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.core.encoding import (
    CMPS, MODES, PSRC_FILE, PSRC_FWD, PSRC_NONE, SRC_FWD, SRC_IMM, SRC_SCALED, SRC_SPECIAL,
)
from qwengpu_mlx.core.isa import Op
from qwengpu_mlx.core.machine import SCALED_SPECIALS, SPECIAL_REGISTERS
from qwengpu_mlx.core.vocab import CHUNK_BITS, CHUNK_SHIFT

from qwengpu_mlx.compiler.alu_add import build_add_family
from qwengpu_mlx.compiler.alu_logic import build_logic_family
from qwengpu_mlx.compiler.alu_mul import build_multi_add, build_mul_family
from qwengpu_mlx.compiler.alu_shfl import build_shfl
from qwengpu_mlx.compiler.context import Context
from qwengpu_mlx.compiler.fetch import EARLY_OPNDS, PREDOPS, Fetch, SlotDecode
from qwengpu_mlx.compiler.memory_parts import decode_part_rows, gated_parts
from qwengpu_mlx.compiler.mlp import eq_terms
from qwengpu_mlx.compiler.residual import BIT, Subspace
from qwengpu_mlx.compiler.wiring import CircuitWiring

MEM_WORD_BITS = 7  # binary digits of a memory word index, at least (the published machine's)


def mem_word_bits(m) -> int:
    """Binary digits of a memory word index: 7 up to 128 words (the published layout), 10 for 1,024."""
    return max(MEM_WORD_BITS, (m.mem_words - 1).bit_length())


def mem_address_bits(m) -> int:
    """Low bits of a register that form a byte address (10 for 7-bit words); any higher bit faults."""
    return mem_word_bits(m) + 3


@dataclass
class SlotIO:
    res: list  # per lane, 32-bit merged result
    pres: list  # per lane, merged predicate result dim
    executed: list  # per lane dim: active and guard true
    mem_present: list  # per lane dim
    mem_word: list  # per lane 7-bit word address Subspace
    mem_value: list  # per lane 32-bit value Subspace
    fault: int  # dim: a memory fault in this slot
    memory_heads: list  # names of lane 0's memory heads, words in order (the host reads slot 0's)


@dataclass
class MemAddress:
    is_mem: int  # dim: the op is a load, store or atomic
    word: list  # per lane: the word index's binary digits (Subspace)
    valid: list  # per lane dim: 0 <= S < 4W
    aligned: list  # per lane dim: S % 4 == 0
    fault: int  # dim: a memory fault in this slot (written by ``memory_read``)
    layer: int  # the MLP whose gates complete the digits (one after A for a two-stage thermometer)
    parts: list | None = None  # per lane, per memory part its gated row digits (``memory_parts``); None: one part
    read_layer: int = -1  # the MLP below the memory heads (``layer``, or the part gates' one after it)


@dataclass
class AtomicSums:
    later: list  # per lane dim: a later executed lane adds to the same word
    old: list  # per lane: the word before this lane's add (what the atomic returns)
    new: list  # per lane: the word after it (what goes back to memory)
    ends: list  # the adders' last layers


class SlotStage:
    """One slot of the block: :meth:`build` places its gates and heads and returns its :class:`SlotIO`.

    It is given what the earlier stages made: the context's dims, the fetch's register
    write key and predicate file, the slot's own decoded instruction and the control
    unit's existing lanes per warp (a shuffle never reads a lane that does not exist).
    """

    def __init__(self, cw: CircuitWiring, ctx: Context, fetched: Fetch, dec: SlotDecode, exist: list,
                 mem_keys: list | None = None):
        self.cw = cw  # the plan its gates and heads go into
        self.ctx = ctx  # the running warp, its mask, the launch geometry
        self.fetch = fetched  # the register-write key and lanes, the predicate file
        self.dec = dec  # this slot's fields and their decoders
        self.exist = exist  # per warp: the lanes that exist in it (``Control.heads``)
        self.mem_keys = mem_keys  # per memory part, the MEM header's gated row (None: memory is one head)

    def register_reads(self, s: int, layer: int, opnds=EARLY_OPNDS) -> dict:
        """Lane heads holding the register file; read operands ``opnds`` of slot s by ``layer``."""
        m, t = self.cw.m, self.cw.t
        R = m.regs
        outs = {}
        L = self.cw.free_linear_layer(layer, len(opnds) * m.lanes)
        reads = self.fetch.exec_reads
        for X in opnds:
            source = self.dec.fields[f"src_{X}"]
            warp, ref = self.ctx.warp, None
            if reads is not None:  # exact zeros but at an EXEC pass (``fetch.exec_reads``)
                source = self.at_exec(L - 1, f"src.s{s}.{X}", source)
                warp, ref = reads.digits, reads.select
            for lane in range(m.lanes):
                h = self.cw.head(L, f"reg.s{s}.{X}.lane{lane}", m.max_warps * R, 32)
                out = self.cw.alloc(f"opnd.s{s}.{X}.lane{lane}", 32, value_range=BIT)
                for w in range(m.max_warps):
                    for r in range(1, R):  # row 0 reads 0: never written, never read
                        self.register_key(h, lane, w, r)
                        terms, th = eq_terms(source, r)
                        self.cw.decoded_query(h, w * R + r, terms + [(warp[w], 1)], th + 1, ref=ref)
                for j in range(3):
                    for i in range(CHUNK_BITS[j]):
                        h.value_bit(CHUNK_SHIFT[j] + i, t.chunk[j][i], tap=1 + j)
                for i in range(32):
                    h.read_bit(i, out[i])
                outs[(X, lane)] = out
        return outs

    def at_exec(self, L: int, name: str, bits: list[int]) -> list[int]:
        """``bits`` ANDed with ``[an EXEC pass]`` (MLP ``L``): the bits there, zeros elsewhere."""
        select = self.fetch.exec_reads.select
        gated = self.cw.alloc(name, len(bits), value_range=BIT)
        for i, d in enumerate(bits):
            self.cw.gate(L, f"{name}.b{i}", [(d, 1), (select, 1)], 2, [(gated[i], 1)])
        return list(gated.dims)

    def register_key(self, h, lane: int, w: int, r: int) -> None:
        """Key row (w, r) of lane ``lane``'s register head: a VAL/VALU header three tokens back
        writes register r of warp w there (against ``ONE2``, or exact zeros off that
        warp's and lane's headers where the fetch gated the key: ``Fetch.reg_keys``)."""
        keys = self.fetch.reg_keys
        if keys is None:
            terms, th = eq_terms(self.fetch.val_dst.dims, r)
            self.cw.decoded_key(h, w * self.cw.m.regs + r, terms + [(self.fetch.val_wlane[lane], 1),
                                                                    (self.ctx.warp[w], 1)], th + 2, tap=0)
            return
        terms, th = eq_terms(keys[lane][w].digits.dims, r)
        self.cw.decoded_key(h, w * self.cw.m.regs + r, terms, th, tap=0, ref=keys[lane][w].select)

    def special_bit(self, name: str, lane: int, bit: int) -> list:
        """Terms giving bit ``bit`` of a special register for ``lane`` (linear in dims)."""
        m = self.cw.m
        lb = m.lane_bits
        if name == "laneid":
            return [(self.cw.ONE, 1.0 / self.cw.K)] if lane >> bit & 1 else []
        if name == "warpid":
            return [(self.ctx.warp[w], 1) for w in range(m.max_warps) if w >> bit & 1]
        if name == "tid.x":
            if bit < lb:
                return [(self.cw.ONE, 1.0 / self.cw.K)] if lane >> bit & 1 else []
            return [(self.ctx.warp[w], 1) for w in range(m.max_warps) if w >> (bit - lb) & 1]
        if name == "tid.x*4":
            return self.special_bit("tid.x", lane, bit - 2) if bit >= 2 else []
        if name == "ntid.x":
            return [(self.ctx.ntid[bit], 1)] if bit < self.ctx.ntid.width else []
        if name == "nctaid.x":
            return [(self.ctx.nctaid[bit], 1)] if bit < self.ctx.nctaid.width else []
        if name == "ctaid.x":
            return [(self.ctx.ctaid[bit], 1)] if bit < self.ctx.ctaid.width else []
        raise KeyError(name)

    def operand_mux(self, s: int, L: int, opnd: dict, prev: list) -> None:
        """Operands that are no register (MLP of ``L``): immediates, specials, forwarded results."""
        f, src = self.dec.fields, self.dec.src
        for (X, lane), out in opnd.items():
            sel = src[X]
            for i in range(32):
                self.cw.gate(L, f"mux.s{s}{X}l{lane}.imm{i}", [(sel[SRC_IMM], 1), (f["imm"][i], 1)], 2, [(out[i], 1)])
                specials = [(SRC_SPECIAL + k, nm) for k, nm in enumerate(SPECIAL_REGISTERS)]
                specials += [(SRC_SCALED + k, nm) for k, nm in enumerate(SCALED_SPECIALS)]
                for code, name in specials:
                    terms = self.special_bit(name, lane, i)
                    if terms:
                        self.cw.gate(L, f"mux.s{s}{X}l{lane}.sp{code}b{i}", [(sel[code], 1)] + terms, 2,
                                  [(out[i], 1)])
                for k, pv in enumerate(prev):
                    self.cw.gate(L, f"mux.s{s}{X}l{lane}.fwd{k}b{i}", [(sel[SRC_FWD + k], 1), (pv.res[lane][i], 1)], 2,
                              [(out[i], 1)])

    def build(self, s: int, Lm: int, prev: list) -> tuple[SlotIO, int]:
        """Slot ``s`` from its register reads at ``Lm``: operands, ALU, memory, merge; (its IO, the layer after it).

        ``prev`` are the earlier slots of the block, whose results this slot may read
        (forwarding). The stages below run in this order, which is also the order their
        gates and dims are made in (the weights depend on it).
        """
        opnd = self.register_reads(s, Lm)
        self.operand_mux(s, Lm, opnd, prev)
        pval = self.predicate_operands(s, Lm, prev)
        A = Lm + 1  # the ALU families start here
        alu, palu, ends = self.alu(s, A, opnd, pval)
        ends.append(self.shuffle(s, Lm, A, opnd, alu, palu))
        addr = self.memory_address(s, Lm, A, opnd)
        La = max(ends)
        executed = self.executed_lanes(s, A, pval)
        memval, Lr, memory_heads = self.memory_read(s, A, addr, executed, alu)
        atom = self.atomics(s, A, Lr, addr, executed, memval, opnd)
        Lmg = max(atom.ends + [La])  # the merge: below it every result is known
        self.late_d_read(s, Lm, Lmg, opnd, prev)
        return self.merge(s, Lmg, opnd, pval, alu, palu, atom, executed, addr, memory_heads), Lmg + 1

    def predicate_operands(self, s: int, Lm: int, prev: list) -> dict:
        """(operand, lane) -> dim of its predicate value after negation (MLP of ``Lm``).

        From the predicate file or an earlier slot's predicate result; a missing guard is true.
        """
        m, f, psrc = self.cw.m, self.dec.fields, self.dec.psrc
        pval = {}
        for X in PREDOPS:
            for lane in range(m.lanes):
                d = self.cw.alloc(f"pop.s{s}.{X}.lane{lane}", 1, value_range=BIT)[0]
                sel = psrc[X]
                neg = f.get(f"{X}_neg", [None])[0]
                sources = [(PSRC_FILE + i, self.fetch.pfile[lane][i]) for i in range(m.preds)]
                sources += [(PSRC_FWD + k, pv.pres[lane]) for k, pv in enumerate(prev)]
                for code, dim in sources:
                    if neg is None:
                        self.cw.gate(Lm, f"pop.s{s}{X}l{lane}c{code}", [(sel[code], 1), (dim, 1)], 2, [(d, 1)])
                    else:
                        self.cw.gate(Lm, f"pop.s{s}{X}l{lane}c{code}p", [(sel[code], 1), (dim, 1), (neg, -1)], 2, [(d, 1)])
                        self.cw.gate(Lm, f"pop.s{s}{X}l{lane}c{code}n", [(sel[code], 1), (dim, -1), (neg, 1)], 2, [(d, 1)])
                if X == "guard":  # no guard: true
                    self.cw.gate(Lm, f"pop.s{s}guard.none.l{lane}", [(sel[PSRC_NONE], 1)], 1, [(d, 1)])
                pval[(X, lane)] = d
        return pval

    def alu(self, s: int, A: int, opnd: dict, pval: dict) -> tuple[list, list, list]:
        """Adder, multiplier and logic families and the predicate logic of every lane, from MLP ``A``.

        All families run in parallel and write the same result dims (only the selected
        op's gates fire). Returns (per lane result, per lane predicate result, each
        family's last layer).
        """
        f, op, N = self.dec.fields, self.dec.op, self.cw.m.lanes
        alu = [self.cw.alloc(f"alu.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        palu = [self.cw.alloc(f"palu.s{s}.lane{lane}", 1, value_range=BIT)[0] for lane in range(N)]
        ends = []
        for lane in range(N):
            a, b, c = opnd[("a", lane)], opnd[("b", lane)], opnd[("c", lane)]
            ends.append(build_add_family(
                self.cw.plan, A, name=f"add.s{s}l{lane}", a=a, b=b,
                op={"add": op[Op.ADD], "sub": op[Op.SUB], "neg": op[Op.NEG], "abs": op[Op.ABS],
                    "min": op[Op.MIN], "max": op[Op.MAX], "setp": op[Op.SETP]},
                signed=f["signed"][0], cmp={c_: op["cmp"][i] for i, c_ in enumerate(CMPS)},
                out=alu[lane], pout=palu[lane]))
            ends.append(build_mul_family(self.cw.plan, A, name=f"mul.s{s}l{lane}", a=a, b=b, c=c,
                                         op={"mul": op[Op.MUL], "mad": op[Op.MAD]}, out=alu[lane]))
            ends.append(build_logic_family(
                self.cw.plan, A, name=f"logic.s{s}l{lane}", a=a, b=b, p=pval[("p0", lane)],
                op={"mov": op[Op.MOV], "and": op[Op.AND], "or": op[Op.OR], "xor": op[Op.XOR],
                    "not": op[Op.NOT], "shl": op[Op.SHL], "shr": op[Op.SHR], "selp": op[Op.SELP]},
                signed=f["signed"][0], out=alu[lane]))
            self.predicate_logic(s, A, lane, pval, palu[lane])
        return alu, palu, ends

    def predicate_logic(self, s: int, A: int, lane: int, pval: dict, out: int) -> None:
        """and, or, xor, not, mov of predicates p0, p1 into the lane's predicate result (MLP ``A``)."""
        op = self.dec.op
        p0, p1 = pval[("p0", lane)], pval[("p1", lane)]
        self.cw.gate(A, f"pand.s{s}l{lane}", [(op[Op.PAND], 1), (p0, 1), (p1, 1)], 3, [(out, 1)])
        self.cw.gate(A, f"por.s{s}l{lane}", [(op[Op.POR], 2), (p0, 1), (p1, 1)], 3, [(out, 1)])
        self.cw.gate(A, f"pxor1.s{s}l{lane}", [(op[Op.PXOR], 1), (p0, 1), (p1, -1)], 2, [(out, 1)])
        self.cw.gate(A, f"pxor2.s{s}l{lane}", [(op[Op.PXOR], 1), (p0, -1), (p1, 1)], 2, [(out, 1)])
        self.cw.gate(A, f"pnot.s{s}l{lane}", [(op[Op.PNOT], 1), (p0, -1)], 1, [(out, 1)])
        self.cw.gate(A, f"pmov.s{s}l{lane}", [(op[Op.PMOV], 1), (p0, 1)], 2, [(out, 1)])

    def shuffle(self, s: int, Lm: int, A: int, opnd: dict, alu: list, palu: list) -> int:
        """shfl across the warp's lanes (from MLP ``A``); returns its last layer.

        Lanes that do not exist in this warp are never shuffle sources: the membership
        mask is ANDed with the warp's existing lanes first (MLP ``Lm``).
        """
        m, f, op, N = self.cw.m, self.dec.fields, self.dec.op, self.cw.m.lanes
        member = self.cw.alloc(f"shfl.member.s{s}", N)
        for j in range(N):
            for w in range(m.max_warps):
                self.cw.gate(Lm, f"shfl.member.s{s}.{j}.w{w}", [(f["member"][j], 1), (self.ctx.warp[w], 1),
                                                              (self.exist[w][j], 1)], 3, [(member[j], 1)])
        return build_shfl(
            self.cw.plan, A, name=f"shfl.s{s}", vals=[opnd[("a", lane)] for lane in range(N)],
            b=[opnd[("b", lane)] for lane in range(N)], mode={mo: op["mode"][i] for i, mo in enumerate(MODES)},
            clamp=self._bits_space(f["clamp"]), segmask=self._bits_space(f["segmask"]),
            member=member, sel=op[Op.SHFL], outs=alu, pouts=palu)

    def memory_address(self, s: int, Lm: int, A: int, opnd: dict) -> MemAddress:
        """Per lane the memory word's binary digits, in range and aligned bits, from ``a + offset`` (MLP ``A``).

        S = a[0:10] + offset (10-bit signed) is small and exact; the word is S / 4 when
        S is in range, aligned and a has no bits above bit 9 (else: a fault). A
        thermometer [S >= 4w] for w = 0..W is written straight into the word's binary
        digits: gate w adds bit_i(w) - bit_i(w - 1) to digit i, so the digits telescope
        to floor(S / 4); gates 0 and W write the in-range bit. Only the digits, the range
        bit and the alignment bit stay in the residual: the memory head's own SiLU turns
        them into a one-hot query (``memory_read``).
        """
        m, f, op, N = self.cw.m, self.dec.fields, self.dec.op, self.cw.m.lanes
        is_mem = self.cw.alloc(f"ismem.s{s}", 1)[0]
        self.cw.gate(Lm, f"ismem.s{s}", [(op[Op.LD], 1), (op[Op.ST], 1), (op[Op.ATOM_ADD], 1)], 1, [(is_mem, 1)])
        W, WB, AB = m.mem_words, mem_word_bits(m), mem_address_bits(m)
        word = [self.cw.alloc(f"memw.s{s}.lane{lane}", WB, value_range=BIT) for lane in range(N)]
        valid = [self.cw.alloc(f"memok.s{s}.lane{lane}", 1)[0] for lane in range(N)]  # 0 <= S < 4W
        aligned = [self.cw.alloc(f"memal.s{s}.lane{lane}", 1)[0] for lane in range(N)]  # S % 4 == 0
        fault = self.cw.alloc(f"fault.s{s}", 1)[0]
        BIG = 2 ** (AB + 2)  # above every in-range S: only a memory op reaches the thresholds
        offb = f["offset"]
        for lane in range(N):
            a_ = opnd[("a", lane)]
            S_terms = [(a_[i], 2 ** i) for i in range(AB)] + [(offb[i], 2 ** i) for i in range(9)] + [(offb[9], -512)]
            S_terms += [(a_[i], -2 ** (AB + 1)) for i in range(AB, 32)] + [(is_mem, BIG)]
            if W <= 1 << MEM_WORD_BITS:
                self.word_thermometer(A, f"memt.s{s}l{lane}", S_terms, BIG, W, range(W + 1), word[lane], valid[lane])
            else:
                self.word_thermometer_two_stage(A, f"memt.s{s}l{lane}", S_terms, BIG, W, word[lane], valid[lane])
            # S % 4 == (a0 + 2 a1 + o0 + 2 o1) % 4, a sum in 0..6: aligned when it is 0 or 4
            low = [(a_[0], 1), (a_[1], 2), (offb[0], 1), (offb[1], 2)]
            self.cw.gate(A, f"memal.s{s}l{lane}.zero", [(d, -c) for d, c in low], 0, [(aligned[lane], 1)])
            self.cw.gate(A, f"memal.s{s}l{lane}.ge4", low, 4, [(aligned[lane], 1)])
            self.cw.gate(A, f"memal.s{s}l{lane}.ge5", low, 5, [(aligned[lane], -1)])
        layer = A if W <= 1 << MEM_WORD_BITS else A + 1
        if self.mem_keys is None:
            return MemAddress(is_mem, word, valid, aligned, fault, layer, None, layer)
        rows = self.cw.plan.shape.key_dim
        exec_now = [] if self.fetch.exec_reads is None else [self.fetch.exec_reads.select]  # ``fetch.exec_reads``
        parts = [gated_parts(self.cw, layer + 1, f"memq.s{s}l{lane}", list(word[lane].dims),
                             [valid[lane], aligned[lane]] + exec_now, rows) for lane in range(N)]
        return MemAddress(is_mem, word, valid, aligned, fault, layer, parts, layer + 1)

    def word_thermometer(self, A: int, name: str, S_terms, BIG: int, W: int, words, digits, valid,
                         width: int | None = None) -> None:
        """Gates ``[S >= 4w]`` for ``w`` in ``words``, telescoping into the low ``width`` of
        ``digits`` (all of them by default): gate w adds ``bit_i(w) - bit_i(w - 1)``, so the
        digits sum to floor(S / 4); gates 0 and W write the in-range bit (``valid`` None: no
        bound here)."""
        for w_ in words:
            if w_ == 0:
                outs = [(valid, 1)] if valid is not None else []
            elif w_ == W:
                outs = [(valid, -1)] if valid is not None else []
            else:
                outs = [(digits[i], (w_ >> i & 1) - ((w_ - 1) >> i & 1))
                        for i in range(digits.width if width is None else width)]
            if outs:
                self.cw.gate(A, f"{name}w{w_}", S_terms, 4 * w_ + BIG, outs)

    def word_thermometer_two_stage(self, A: int, name: str, S_terms, BIG: int, W: int, digits, valid) -> None:
        """A large memory's digits in two MLPs, about 2 sqrt(W) gates instead of W.

        MLP ``A``: ``[S >= 4 B j]`` over blocks of B = 32 words gives the digits above the
        fifth (and the in-range bit); MLP ``A + 1``: the same thermometer over ``S`` minus the
        block's first byte (those digits, weighed) gives the five below. Exact: every sum
        is an integer and each stage's gates see one value."""
        low = 5
        B = 1 << low
        blocks = -(-W // B)
        for j in range(blocks + 1):
            outs = []
            if j == 0:
                outs.append((valid, 1))
            else:
                outs += [(digits[low + i], (j >> i & 1) - ((j - 1) >> i & 1)) for i in range(digits.width - low)]
            if j == blocks and W == blocks * B:
                outs = [(valid, -1)]  # past the last block: out of range, the digits stay saturated
            self.cw.gate(A, f"{name}b{j}", S_terms, 4 * B * j + BIG, outs)
        if W != blocks * B:
            self.cw.gate(A, f"{name}top", S_terms, 4 * W + BIG, [(valid, -1)])
        rest = S_terms + [(digits[low + i], -4 * B * 2 ** i) for i in range(digits.width - low)]
        self.word_thermometer(A + 1, f"{name}f", rest, BIG, B, range(1, B), digits, None, width=low)

    def executed_lanes(self, s: int, A: int, pval: dict) -> list:
        """Per lane: active (in the EXEC mask) and its guard true (MLP ``A``)."""
        executed = [self.cw.alloc(f"exec.s{s}.lane{lane}", 1)[0] for lane in range(self.cw.m.lanes)]
        for lane in range(self.cw.m.lanes):
            self.cw.gate(A, f"executed.s{s}l{lane}", [(self.ctx.mask[lane], 1), (pval[("guard", lane)], 1)], 2,
                      [(executed[lane], 1)])
        return executed

    def memory_read(self, s: int, A: int, addr: MemAddress, executed: list, alu: list) -> tuple[list, int, list]:
        """Per lane the addressed word (a memory head above ``A``), faults, the LD result; (words, head
        layer, lane 0's memory head names in word order: where the host reads memory from).

        The head's key row w comes from a ``MEM(item, addr)`` header, its query from the
        address digits, both decoded by the head's SiLU; no word (out of range or not
        aligned) is a query of exact zeros.
        """
        op, N, W = self.dec.op, self.cw.m.lanes, self.cw.m.mem_words
        Lr = self.cw.linear_at_or_after(addr.read_layer + 1)
        memval = [self.cw.alloc(f"memval.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        rows = self.cw.plan.mixer(Lr).Dk  # words per head: a head's key rows
        lane0_heads = []
        for lane in range(N):
            names = []
            for part, first in enumerate(range(0, W, rows)):  # the other parts' queries are exact zeros
                suffix = "" if part == 0 else f".w{first}"
                h = self.cw.head(Lr, f"mem.s{s}.lane{lane}{suffix}", min(rows, W - first), 32)
                if addr.parts is None:
                    self.memory_rows(h, first, addr, lane)
                else:
                    decode_part_rows(self.cw, h, self.mem_keys[part], addr.parts[lane][part])
                    self.memory_values(h)
                for i in range(32):
                    h.read_bit(i, memval[lane][i])
                names.append(h.name)
            if lane == 0:
                lane0_heads = names
        for lane in range(N):  # an executed memory op whose address is no word of memory
            self.cw.gate(Lr, f"fault.s{s}l{lane}", [(executed[lane], 2), (addr.is_mem, 2), (addr.valid[lane], -1),
                                                  (addr.aligned[lane], -1)], 3, [(addr.fault, 1)])
        for lane in range(N):
            for i in range(32):
                self.cw.gate(Lr, f"ld.s{s}l{lane}b{i}", [(op[Op.LD], 1), (memval[lane][i], 1)], 2, [(alu[lane][i], 1)])
        return memval, Lr, lane0_heads

    def memory_rows(self, h, first: int, addr: MemAddress, lane: int) -> None:
        """Head ``h`` holds words ``first ..``: row r's key from a ``MEM(item, first + r)`` header,
        its query from the lane's address digits (both decoded by the head's SiLU)."""
        t = self.cw.t
        for r in range(h.rows):
            w_ = first + r
            terms, th = eq_terms(t.mem_addr.dims, w_)
            self.cw.decoded_key(h, r, terms + [(t.kind["MEM"], 1)], th + 1, tap=0)
            terms, th = eq_terms(addr.word[lane].dims, w_)  # the digits equal w, in range, aligned
            self.cw.decoded_query(h, r, terms + [(addr.valid[lane], 1), (addr.aligned[lane], 1)], th + 2)
        self.memory_values(h)

    def memory_values(self, h) -> None:
        """A memory head's value: the record's three chunks after its header."""
        t = self.cw.t
        for j in range(3):
            for i in range(CHUNK_BITS[j]):
                h.value_bit(CHUNK_SHIFT[j] + i, t.chunk[j][i], tap=1 + j)

    def atomics(self, s: int, A: int, Lr: int, addr: MemAddress, executed: list, memval: list,
                opnd: dict) -> AtomicSums:
        """atom.add: per lane the word's new value and whether a later lane adds to it too.

        Same-word earlier executed lanes contribute their b. Word equality is
        [Wk - Wl >= 0] and [Wl - Wk >= 0] on the digits (MLP A+1), then their AND (A+2);
        the sums are multi-operand adders.
        """
        op, N = self.dec.op, self.cw.m.lanes
        word, valid = addr.word, addr.valid
        eqm = {}
        for lane in range(N):
            for k in range(lane):
                d = self.cw.alloc(f"atom.eq.s{s}.{k}{lane}", 1)[0]
                half = self.cw.alloc(f"atom.eqh.s{s}.{k}{lane}", 2)
                WB = word[k].width
                big = 2 ** (WB + 1)  # each condition outweighs any digit difference (< 2^WB)
                on = [(executed[k], big), (op[Op.ATOM_ADD], big), (valid[k], big), (valid[lane], big)]
                for j, sign in enumerate((1, -1)):
                    diff = [(word[k][i], sign * 2 ** i) for i in range(WB)]
                    diff += [(word[lane][i], -sign * 2 ** i) for i in range(WB)]
                    self.cw.gate(addr.layer + 1, f"atom.eq.s{s}.{k}{lane}.h{j}", diff + on, 4 * big, [(half[j], 1)])
                self.cw.gate(addr.layer + 2, f"atom.eq.s{s}.{k}{lane}", [(half[0], 1), (half[1], 1)], 2, [(d, 1)])
                eqm[(k, lane)] = d
        Lq = max(Lr + 1, addr.layer + 3)
        later = [self.cw.alloc(f"atom.later.s{s}.lane{lane}", 1)[0] for lane in range(N)]
        for lane in range(N):
            for k in range(lane + 1, N):
                self.cw.gate(Lq, f"atom.later.s{s}.{lane}{k}", [(eqm[(lane, k)], 1), (executed[k], 1)], 2,
                          [(later[lane], 1)])
        old = [self.cw.alloc(f"atom.old.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        new = [self.cw.alloc(f"atom.new.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        is_atom = op[Op.ATOM_ADD]
        qends = []
        for lane in range(N):
            terms = [(memval[lane], None)] + [(opnd[("b", k)], eqm[(k, lane)]) for k in range(lane)]
            qends.append(build_multi_add(self.cw.plan, Lq, name=f"atom.old.s{s}l{lane}", terms=terms,
                                         out=old[lane], enable=is_atom))
            qends.append(build_multi_add(self.cw.plan, Lq, name=f"atom.new.s{s}l{lane}",
                                         terms=terms + [(opnd[("b", lane)], None)], out=new[lane], enable=is_atom))
        return AtomicSums(later, old, new, qends)

    def late_d_read(self, s: int, Lm: int, Lmg: int, opnd: dict, prev: list) -> None:
        """d, the destination's old value, into ``opnd``: only the merge (at ``Lmg``) reads it.

        It is read just below the merge, unless it may come forwarded from earlier slots
        of the last slot (their results would then stay in the residual through this
        slot's ALU): then at ``Lm`` with the other operands.
        """
        late_d = s < self.cw.m.slots_per_block - 1 or not prev
        Ld = self.cw.free_linear_layer(Lmg - 1, self.cw.m.lanes, lo=Lm) if late_d else Lm
        d_opnd = self.register_reads(s, Ld, ("d",))
        self.operand_mux(s, Ld, d_opnd, prev)
        opnd.update(d_opnd)

    def merge(self, s: int, Lmg: int, opnd: dict, pval: dict, alu: list, palu: list, atom: AtomicSums,
              executed: list, addr: MemAddress, memory_heads: list) -> SlotIO:
        """The result where the guard holds, the old value where it fails; the memory item (MLP ``Lmg``)."""
        op, N = self.dec.op, self.cw.m.lanes
        old, new, later = atom.old, atom.new, atom.later
        res = [self.cw.alloc(f"res.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        pres = [self.cw.alloc(f"pres.s{s}.lane{lane}", 1, value_range=BIT)[0] for lane in range(N)]
        mem_present = [self.cw.alloc(f"mem.present.s{s}.lane{lane}", 1)[0] for lane in range(N)]
        mem_value = [self.cw.alloc(f"mem.value.s{s}.lane{lane}", 32, value_range=BIT) for lane in range(N)]
        for lane in range(N):
            g = pval[("guard", lane)]
            d_ = opnd[("d", lane)]
            for i in range(32):
                self.cw.gate(Lmg, f"merge.s{s}l{lane}b{i}", [(alu[lane][i], 1), (g, 1)], 2, [(res[lane][i], 1)])
                self.cw.gate(Lmg, f"merge.s{s}l{lane}a{i}", [(old[lane][i], 1), (g, 1)], 2, [(res[lane][i], 1)])
                self.cw.gate(Lmg, f"keep.s{s}l{lane}b{i}", [(d_[i], 1), (g, -1)], 1, [(res[lane][i], 1)])
                # memory item value: st stores b, atom stores the new value
                self.cw.gate(Lmg, f"stv.s{s}l{lane}b{i}", [(op[Op.ST], 1), (opnd[("b", lane)][i], 1)], 2,
                          [(mem_value[lane][i], 1)])
                self.cw.gate(Lmg, f"atv.s{s}l{lane}b{i}", [(new[lane][i], 1)], 1, [(mem_value[lane][i], 1)])
            self.cw.gate(Lmg, f"pmerge.s{s}l{lane}", [(palu[lane], 1), (g, 1)], 2, [(pres[lane], 1)])
            self.cw.gate(Lmg, f"pkeep.s{s}l{lane}", [(pval[("pold", lane)], 1), (g, -1)], 1, [(pres[lane], 1)])
            # an atomic's word goes back down once, from the last lane that added to it
            self.cw.gate(Lmg, f"mempresent.s{s}l{lane}", [(op[Op.ST], 1), (op[Op.ATOM_ADD], 1), (executed[lane], 2),
                                                       (later[lane], -4)], 3, [(mem_present[lane], 1)])
        return SlotIO(res, pres, executed, mem_present, addr.word, mem_value, addr.fault, memory_heads)

    def _bits_space(self, dims: list[int]) -> Subspace:
        """A Subspace view of consecutive field dims (fields are contiguous in a piece)."""
        if list(dims) == list(range(dims[0], dims[0] + len(dims))):
            return Subspace(f"field@{dims[0]}", dims[0], len(dims))
        raise ValueError("field crosses a ROM piece boundary")
