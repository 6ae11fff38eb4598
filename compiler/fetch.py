"""The fetch stage: the block's ROM row, its field decoders, register and predicate write keys.

ROM heads (query: the context's block) read the instruction bits; MLP gates decode the
op, comparison, mode and operand sources into one-hots. Slot 0, the terminator, the final
predicates and every slot's destination are read at the start (:func:`fetch`); a later
slot's other fields just below its register reads (:func:`fetch_slot`). docs/CIRCUIT.md,
"Pass layout", item 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.core.encoding import (
    CMPS, MODES, OPCODES, PSRC_FWD, SLOT_BITS, SLOT_FIELDS, SRC_SCALED, TERM_KINDS, pfinal_piece, term_fields,
    term_piece,
)
from qwengpu_mlx.core.machine import SCALED_SPECIALS
from qwengpu_mlx.core.vocab import CHUNK_BITS, CHUNK_SHIFT

from qwengpu_mlx.compiler.context import Context
from qwengpu_mlx.compiler.deltanet import CURRENT
from qwengpu_mlx.compiler.memory_parts import Part
from qwengpu_mlx.compiler.mlp import eq_terms
from qwengpu_mlx.compiler.residual import BIT, Subspace
from qwengpu_mlx.compiler.wiring import CircuitWiring

OPNDS = ("a", "b", "c", "d")
EARLY_OPNDS = ("a", "b", "c")  # read before the ALU; d (the destination's old value) just before the merge
PREDOPS = ("guard", "p0", "p1", "pold")


@dataclass(frozen=True)
class SlotDecode:
    """One slot's instruction: its raw field bits and their decoded one-hots."""

    fields: dict  # field name -> its bits' residual dims
    op: dict  # Op -> dim of its decoder; "cmp", "mode" -> one-hot Subspace
    src: dict  # operand ("a".."d") -> one-hot Subspace over its 5-bit source code
    psrc: dict  # predicate operand (``PREDOPS``) -> one-hot Subspace over its source code


@dataclass(frozen=True)
class Fetch:
    """What the fetch stage made: slot 0's decode, every slot's destination, the terminator."""

    slot0: SlotDecode
    dst: list  # per slot: its destination register's bits (dims)
    term: dict  # terminator field name -> bits (dims)
    term_kind: dict  # TermKind -> dim of its decoder
    term_pred: Subspace  # the branch predicate's source, one-hot
    pfinal_src: list  # per predicate: its final value's source, one-hot
    val_dst: Subspace  # the destination of the slot the VAL header names (register-write key)
    pkey: list  # per lane: PVAL(lane) at warp w, one-hot over warps (predicate-write key)
    val_wlane: Subspace  # per lane: a VAL/VALU record writes this lane's registers
    first_lane: Subspace  # the first lane of the last EXEC's mask, one-hot
    hdr_valu_slot: Subspace  # the last header was VALU(s), one-hot over slots
    pfile: list  # per lane: the running warp's predicate file (dims)
    reg_keys: list | None = None  # per lane, per warp: the register-write key's gated row (``register_parts``)
    exec_reads: Part | None = None  # [an EXEC pass] and the running warp ANDed with it (``exec_reads``)


def read_rom(cw: CircuitWiring, ctx: Context, L: int, name: str, pieces: dict[int, list[int]]) -> dict[int, int]:
    """ROM heads at layer ``L`` (query: ctx.block, one-hot or decoded), one per piece, reading the listed bits.

    Every head keeps its own copy of the program (the PROG records write them all), so a
    slot's fields can be read just before the slot instead of all at the start: the
    raw bits then stay in the residual for a few layers, not for the whole pass.
    Returns ROM bit position (piece * 32 + bit) -> residual dim.
    """
    m, t = cw.m, cw.t
    dims = {}
    for p, bits in pieces.items():
        h = cw.head(L, f"{name}.piece{p}", m.rom_blocks, 32)
        out = cw.alloc(f"{name}.piece{p}", len(bits))
        for b in range(m.rom_blocks):
            # key row b from the PROG(block, piece) header 3 tokens back, decoded by the SiLU
            bt, bth = eq_terms(t.prog_block.dims, b)
            pt, pth = eq_terms(t.prog_piece.dims, p)
            cw.decoded_key(h, b, bt + pt + [(t.kind["PROG"], 1)], bth + pth + 1, tap=0)
            if cw.t.binary:  # the block's digits, decoded by the head's SiLU
                cw.decoded_query(h, b, *eq_terms(ctx.block.dims, b))
            else:
                h.query(b, ctx.block[b])
        for j in range(3):
            for i in range(CHUNK_BITS[j]):
                h.value_bit(CHUNK_SHIFT[j] + i, t.chunk[j][i], tap=1 + j)
        for k, i in enumerate(bits):
            h.read_bit(i, out[k])
            dims[p * 32 + i] = out[k]
    return dims


def slot_positions(s: int, names=None) -> dict[int, list[int]]:
    """piece -> ROM bit positions in it of slot ``s``'s fields (``names``: only those)."""
    out: dict[int, list[int]] = {}
    for name, (off, w) in SLOT_FIELDS.items():
        if names is None or name in names:
            for i in range(w):
                pos = s * SLOT_BITS + off + i
                out.setdefault(pos // 32, []).append(pos % 32)
    return {p: sorted(b) for p, b in sorted(out.items())}


def slot_fields(s: int, rom: dict[int, int], names=None) -> dict[str, list[int]]:
    """Field name -> its bits' residual dims, from a ``read_rom`` map."""
    return {name: [rom[s * SLOT_BITS + off + i] for i in range(w)]
            for name, (off, w) in SLOT_FIELDS.items() if names is None or name in names}


def decode_slot(cw: CircuitWiring, s: int, f: dict, L: int) -> SlotDecode:
    """Slot ``s``'s field decoders (MLP of layer ``L``): op, cmp, mode, source one-hots."""
    m = cw.m
    ops = {}
    for code, op in enumerate(OPCODES):
        if op is None:
            continue
        d = cw.alloc(f"dec.s{s}.op.{op.value}", 1)[0]
        terms, th = eq_terms(f["op"], code)
        cw.gate(L, f"dec.s{s}.op{code}", terms, th, [(d, 1)])
        ops[op] = d
    for name, values in (("cmp", CMPS), ("mode", MODES)):
        sp = cw.alloc(f"dec.s{s}.{name}", len(values))
        for code in range(len(values)):
            terms, th = eq_terms(f[name], code)
            cw.gate(L, f"dec.s{s}.{name}{code}", terms, th, [(sp[code], 1)])
        ops[name] = sp
    srcs = {}
    for X in OPNDS:
        sp = cw.alloc(f"dec.s{s}.src_{X}", 32)  # one-hot over the 5-bit code
        for code in range(1, SRC_SCALED + len(SCALED_SPECIALS)):
            terms, th = eq_terms(f[f"src_{X}"], code)
            cw.gate(L, f"dec.s{s}.src_{X}{code}", terms, th, [(sp[code], 1)])
        srcs[X] = sp
    ps = {}
    for X in PREDOPS:
        sp = cw.alloc(f"dec.s{s}.{X}", 16)
        for code in range(0, PSRC_FWD + m.slots_per_block):
            terms, th = eq_terms(f[X], code)
            cw.gate(L, f"dec.s{s}.{X}{code}", terms, th, [(sp[code], 1)])
        ps[X] = sp
    return SlotDecode(f, ops, srcs, ps)


def fetch_slot(cw: CircuitWiring, ctx: Context, fetched: Fetch, s: int, Lm: int) -> SlotDecode:
    """Read and decode slot ``s``'s fields (s > 0) just below its register reads at ``Lm``."""
    R = cw.free_linear_layer(Lm, len(EARLY_OPNDS) * cw.m.lanes)
    rest = [name for name in SLOT_FIELDS if name != "dst"]  # dst: read at the start (``fetch``)
    pieces = slot_positions(s, rest)
    Lr = cw.free_linear_layer(R - 1, len(pieces))
    fields = {"dst": fetched.dst[s], **slot_fields(s, read_rom(cw, ctx, Lr, f"rom.s{s}", pieces), rest)}
    return decode_slot(cw, s, fields, Lr)


def fetch(cw: CircuitWiring, ctx: Context, L: int, zero_keys: bool = False) -> Fetch:
    """ROM read (query: ctx.block), field decoders, register/predicate write keys
    (``zero_keys``: also the register-write key per lane and warp, exact zeros elsewhere).

    Slot 0, the terminator and the final predicates are read here; later slots only
    their destinations (every slot's register-write key needs them from the start),
    the rest in ``fetch_slot``.
    """
    m = cw.m
    S = m.slots_per_block
    early = slot_positions(0)
    for s in range(1, S):
        for p, bits in slot_positions(s, ("dst",)).items():
            early.setdefault(p, []).extend(bits)
    tb, pb = term_piece(m), pfinal_piece(m)
    for p in (tb, pb):
        early[p] = list(range(32))
    rom = read_rom(cw, ctx, L, "rom", {p: sorted(set(b)) for p, b in sorted(early.items())})
    f0 = slot_fields(0, rom)
    dst = [f0["dst"]] + [slot_fields(s, rom, ("dst",))["dst"] for s in range(1, S)]
    tf = {name: [rom[tb * 32 + off + i] for i in range(w)] for name, (off, w) in term_fields(m).items()}
    pfinal = [[rom[pb * 32 + 4 * p + i] for i in range(4)] for p in range(m.preds)]
    slot0 = decode_slot(cw, 0, f0, L)
    term_kind, term_pred, pfinal_src = terminator_decoders(cw, L, tf, pfinal)
    val_dst, pkey, val_wlane = write_keys(cw, ctx, L, dst)
    first_lane, hdr_valu_slot = header_decoders(cw, ctx, L)
    reg_keys = register_parts(cw, ctx, L, dst) if zero_keys else None
    reads = exec_reads(cw, ctx, L) if zero_keys else None
    return Fetch(slot0, dst, tf, term_kind, term_pred, pfinal_src, val_dst, pkey, val_wlane, first_lane,
                 hdr_valu_slot, predicate_file(cw, ctx, L, pkey), reg_keys, reads)


def terminator_decoders(cw: CircuitWiring, L: int, tf: dict, pfinal: list) -> tuple:
    """The terminator's kind, its branch predicate's source, each final predicate's source (MLP ``L``)."""
    m = cw.m
    term_kind = {}
    for code, kind in enumerate(TERM_KINDS):
        d = cw.alloc(f"dec.term.{kind.value}", 1)[0]
        terms, th = eq_terms(tf["kind"], code)
        cw.gate(L, f"dec.term{code}", terms, th, [(d, 1)])
        term_kind[kind] = d
    term_pred = cw.alloc("dec.term.pred", 16)
    for code in range(0, PSRC_FWD + m.slots_per_block):
        terms, th = eq_terms(tf["pred"], code)
        cw.gate(L, f"dec.term.pred{code}", terms, th, [(term_pred[code], 1)])
    pfinal_src = []
    for p in range(m.preds):
        sp = cw.alloc(f"dec.pfinal{p}", 16)
        for code in range(0, PSRC_FWD + m.slots_per_block):
            terms, th = eq_terms(pfinal[p], code)
            cw.gate(L, f"dec.pfinal{p}.{code}", terms, th, [(sp[code], 1)])
        pfinal_src.append(sp)
    return term_kind, term_pred, pfinal_src


def write_keys(cw: CircuitWiring, ctx: Context, L: int, dst: list) -> tuple:
    """Register-write key, predicate-write keys and register-write lanes (MLP ``L``).

    VAL(s, l) header -> row (w, dst of slot s) in lane l's heads: the MLP picks the
    destination of the slot the header names (4 dims); the heads' own SiLU decodes
    (dst, warp, lane) into the one-hot key (``decoded_key``). PVAL(l) -> row w in lane
    l's predicate heads. VAL(s, l) writes lane l; VALU(s) every lane the last EXEC ran.
    """
    m, t = cw.m, cw.t
    val_dst = cw.alloc("val.dst", len(dst[0]))
    for s in range(m.slots_per_block):
        for i, d in enumerate(dst[s]):
            cw.gate(L, f"val.dst.s{s}b{i}", [(t.val_slot[s], 1), (d, 1)], 2, [(val_dst[i], 1)])
    pkey = [cw.alloc(f"pkey.lane{lane}", m.max_warps) for lane in range(m.lanes)]
    for lane in range(m.lanes):
        for w in range(m.max_warps):
            cw.gate(L, f"pkey.l{lane}w{w}", [(t.pval_lane[lane], 1), (ctx.warp[w], 1)], 2, [(pkey[lane][w], 1)])
    val_wlane = cw.alloc("val.wlane", m.lanes)
    for lane in range(m.lanes):
        cw.gate(L, f"val.wlane{lane}", [(t.val_lane[lane], 2), (t.kind["VALU"], 1), (ctx.mask[lane], 1)], 2,
                [(val_wlane[lane], 1)])
    return val_dst, pkey, val_wlane


def register_parts(cw: CircuitWiring, ctx: Context, L: int, dst: list) -> list:
    """Per lane and warp, the register-write key as a ``memory_parts.Part`` (MLP ``L``).

    The part gate is ``[a VAL(s, l) or VALU(s) header writes lane l of warp w]`` and its
    row digits the destination of slot s, each ANDed with it (one threshold gate per slot
    and digit: 2 slot + 2 digit + 2 warp + 2 VAL lane + VALU + mask >= 8, the same lane
    rule as ``val.wlane``). A register head's rows of warp w decode against the part gate,
    so they are exact zeros at every other token (``memory_parts`` says why that pays).
    """
    m, t = cw.m, cw.t
    parts = []
    for lane in range(m.lanes):
        lane_terms = [(t.val_lane[lane], 2), (t.kind["VALU"], 1), (ctx.mask[lane], 1)]
        row = []
        for w in range(m.max_warps):
            select = cw.alloc(f"regkey.l{lane}w{w}", 1)[0]
            digits = cw.alloc(f"regkey.l{lane}w{w}.row", len(dst[0]), value_range=BIT)
            cw.gate(L, f"regkey.l{lane}w{w}", [(ctx.warp[w], 2)] + lane_terms, 4, [(select, 1)])
            for s in range(m.slots_per_block):
                for i, d in enumerate(dst[s]):
                    cw.gate(L, f"regkey.l{lane}w{w}.s{s}b{i}", [(t.val_slot[s], 2), (d, 2), (ctx.warp[w], 2)]
                            + lane_terms, 8, [(digits[i], 1)])
            row.append(Part(select, digits))
        parts.append(row)
    return parts


def exec_reads(cw: CircuitWiring, ctx: Context, L: int) -> Part:
    """``[this pass is an EXEC's]`` (MLP 0: a slot's gates at MLP ``L`` read it) and the
    running warp's one-hot ANDed with it (MLP ``L``).

    The slots run at an EXEC pass and their results are latched there (``latch``); at the
    passes that emit the step's records, the register and memory reads feed nothing that
    is kept. Register read queries decoded against this gate instead of ``ONE2`` (and
    memory queries with it among their conditions) are exact zeros at those passes, so
    the native step leaves the heads as they are (``circuit_step.cpp``'s ``kept_as_is``)
    at most tokens, where decoded against ``ONE2`` every channel ran at every token.
    """
    t = cw.t
    select = cw.alloc("exec.now", 1)[0]
    warp = cw.alloc("exec.now.warp", cw.m.max_warps, value_range=BIT)
    cw.gate(0, "exec.now", [(t.kind["EXEC"], 1)], 1, [(select, 1)])
    for w in range(cw.m.max_warps):
        cw.gate(L, f"exec.now.w{w}", [(select, 1), (ctx.warp[w], 1)], 2, [(warp[w], 1)])
    return Part(select, warp)


def header_decoders(cw: CircuitWiring, ctx: Context, L: int) -> tuple:
    """The open VAL header as a slot x lane one-hot (into ``ctx.hdr_val``), the mask's first
    lane, the open VALU header's slot (MLP ``L``): what the emission reads."""
    m = cw.m
    S = m.slots_per_block
    for s in range(S):
        for lane in range(m.lanes):
            cw.gate(L, f"hdr.val.s{s}l{lane}", [(ctx.hdr_val_slot[s], 1), (ctx.hdr_val_lane[lane], 1)], 2,
                    [(ctx.hdr_val[s * m.lanes + lane], 1)])
    first_lane = cw.alloc("ctx.mask.first", m.lanes)  # the first lane of the last EXEC's mask
    for lane in range(m.lanes):
        cw.gate(L, f"mask.first{lane}", [(ctx.mask[lane], lane + 1)] + [(ctx.mask[k], -1) for k in range(lane)],
                lane + 1, [(first_lane[lane], 1)])
    hdr_valu_slot = cw.alloc("ctx.hdr.valu.slot", S)
    for s in range(S):
        cw.gate(L, f"hdr.valu.s{s}", [(ctx.hdr_val_slot[s], 1), (ctx.hdr_valu[0], 1)], 2, [(hdr_valu_slot[s], 1)])
    return first_lane, hdr_valu_slot


def predicate_file(cw: CircuitWiring, ctx: Context, L: int, pkey: list) -> list:
    """Per lane: the running warp's predicates, read from the lane's predicate head (mixer of ``L + 1``)."""
    m, t = cw.m, cw.t
    Lp = cw.linear_at_or_after(L + 1)
    pfile = []
    for lane in range(m.lanes):
        h = cw.head(Lp, f"pfile.lane{lane}", m.max_warps, m.preds)
        out = cw.alloc(f"pfile.lane{lane}", m.preds)
        for w in range(m.max_warps):
            h.key(w, pkey[lane][w], CURRENT)
            h.query(w, ctx.warp[w])
        for i in range(m.preds):
            h.value_bit(i, t.pval_bits[i], CURRENT)
            h.read_bit(i, out[i])
        pfile.append(out)
    return pfile
