"""How a machine program is laid out in the model's ROM: bit fields of each block.

A block is ``pieces_per_block`` 32-bit pieces: four per slot (the slot's instruction,
with operand sources already resolved to the register file, an earlier slot's result,
the immediate or a special register), a terminator piece and a piece naming where
each predicate's final value comes from. The host turns these into ``PROG`` records;
the compiler reads the same table to wire the decoder. One table, both sides.
"""

from __future__ import annotations

from functools import lru_cache

from qwengpu_mlx.core.isa import Block, Imm, Op, Pred, Program, Reg, Special, TermKind
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, SCALED_SPECIALS, SPECIAL_REGISTERS, MachineConfig
from qwengpu_mlx.core.records import pc_bits
from qwengpu_mlx.core.vocab import pieces_per_block

# opcode numbers (0 = empty slot)
OPCODES: list[Op | None] = [None, Op.MOV, Op.ADD, Op.SUB, Op.MUL, Op.MAD, Op.NEG, Op.ABS, Op.MIN, Op.MAX,
                            Op.AND, Op.OR, Op.XOR, Op.NOT, Op.SHL, Op.SHR, Op.SELP, Op.SETP, Op.PAND,
                            Op.POR, Op.PXOR, Op.PNOT, Op.PMOV, Op.LD, Op.ST, Op.ATOM_ADD, Op.SHFL]
CMPS = ["eq", "ne", "lt", "le", "gt", "ge"]
MODES = ["idx", "up", "down", "bfly"]

# operand source codes (5 bits)
SRC_ZERO = 0  # 1..15: registers r1..r15
SRC_SPECIAL = 16  # 16..21: SPECIAL_REGISTERS in order
SRC_IMM = 22
SRC_FWD = 23  # 23..25: result of slot 0..2 of this block
SRC_SCALED = 26  # 26..: SCALED_SPECIALS in order (%tid.x*4)

# predicate source codes (4 bits): 0 none (true), 1..8 file p0..p7, 9..12 slot 0..3's result
PSRC_NONE = 0
PSRC_FILE = 1
PSRC_FWD = 9

# slot fields: name -> (bit offset in the slot's 128 bits, width)
SLOT_FIELDS: dict[str, tuple[int, int]] = {}
_off = 0
for _name, _w in [("op", 5), ("signed", 1), ("cmp", 3), ("mode", 2), ("dst", 4), ("pdst", 3),
                  ("pdst_valid", 1), ("src_a", 5), ("src_b", 5), ("src_c", 5), ("src_d", 5),
                  ("imm", 32), ("offset", 10), ("clamp", 2), ("segmask", 2), ("member", 4),
                  ("guard", 4), ("guard_neg", 1), ("p0", 4), ("p0_neg", 1), ("p1", 4), ("p1_neg", 1),
                  ("pold", 4), ("emit", 1)]:
    SLOT_FIELDS[_name] = (_off, _w)
    _off += _w
SLOT_BITS = 128
assert _off <= SLOT_BITS

class EncodeError(ValueError):
    pass


TERM_KINDS = [TermKind.EXIT, TermKind.JUMP, TermKind.BRANCH, TermKind.BARRIER]
TERM_BLOCK_BITS = 5  # a block number in the terminator piece, for ROMs of up to 32 blocks


@lru_cache(maxsize=8)
def term_fields(machine: MachineConfig = DEFAULT_MACHINE) -> dict[str, tuple[int, int]]:
    """The terminator piece's fields: name -> (bit offset, width).

    Block numbers take ``TERM_BLOCK_BITS``, or the machine's pc width when its ROM is
    larger (7 bits for 128 blocks: 30 bits in all), so the published machine's layout,
    and with it its weights, stay as they were."""
    blk = max(TERM_BLOCK_BITS, pc_bits(machine))
    fields, off = {}, 0
    for name, w in [("kind", 2), ("target", blk), ("fallthrough", blk), ("pred", 4), ("pred_neg", 1),
                    ("reconv", blk), ("reconv_valid", 1), ("pemit", 1)]:
        fields[name] = (off, w)
        off += w
    if off > 32:
        raise EncodeError(f"{machine.rom_blocks} ROM blocks need {blk}-bit block numbers: the terminator "
                          f"piece would need {off} bits of 32")
    return fields


# piece "pfinal": 4 bits per predicate, a predicate source code for its value after the block


def term_piece(machine: MachineConfig) -> int:
    return 4 * machine.slots_per_block


def pfinal_piece(machine: MachineConfig) -> int:
    return 4 * machine.slots_per_block + 1


def field_bit(slot: int, name: str, bit: int) -> tuple[int, int]:
    """(piece, bit within piece) of bit ``bit`` of slot field ``name``."""
    off, w = SLOT_FIELDS[name]
    assert 0 <= bit < w
    pos = slot * SLOT_BITS + off + bit
    return pos // 32, pos % 32


def _put(bits: list[int], pos: int, width: int, value: int) -> None:
    for i in range(width):
        if (value >> i) & 1:
            bits[pos + i] = 1


def live_out_registers(blocks: list[Block]) -> dict[int, set[int]]:
    """Registers each block's successors may read before writing (guarded writes read)."""
    use, kill = {}, {}
    for b in blocks:
        u, k = set(), set()
        for ins in b.instrs:
            srcs = {s.index for s in ins.srcs if isinstance(s, Reg) and s.index}
            u |= srcs - k
            if ins.dst is not None and not ins.writes_pred:
                if ins.guard is not None:
                    if ins.dst not in k:
                        u.add(ins.dst)
                else:
                    k.add(ins.dst)
        use[b.index], kill[b.index] = u, k
    return block_live_out(blocks, use, kill)


def live_out_predicates(blocks: list[Block]) -> dict[int, set[int]]:
    """Predicates each block's successors may read before writing them."""
    use, kill = {}, {}
    for b in blocks:
        u, k = set(), set()
        for ins in b.instrs:
            reads = {p.index for p in ins.psrcs} | ({ins.guard.index} if ins.guard is not None else set())
            u |= reads - k
            writes = set()
            if ins.writes_pred and ins.dst is not None:
                writes.add(ins.dst)
            if ins.pdst is not None:
                writes.add(ins.pdst)
            if ins.guard is not None:
                u |= writes - k
            else:
                k |= writes
        if b.term.pred is not None and b.term.pred.index not in k:
            u.add(b.term.pred.index)
        use[b.index], kill[b.index] = u, k
    return block_live_out(blocks, use, kill)


def block_live_out(blocks, use: dict, kill: dict) -> dict:
    """Backward dataflow: what each block's successors may read before writing.

    ``use[i]`` is what block ``i`` reads before writing (its terminator's reads included),
    ``kill[i]`` what it surely writes; the blocks are any with ``index`` and ``term`` (the
    machine's blocks here, the host's virtual-register blocks in ``host.regalloc``)."""
    succ = {b.index: _successors(b) for b in blocks}
    live_in = {b.index: set() for b in blocks}
    live_out = {b.index: set() for b in blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):
            out = set().union(*(live_in[s] for s in succ[b.index])) if succ[b.index] else set()
            inn = use[b.index] | (out - kill[b.index])
            if out != live_out[b.index] or inn != live_in[b.index]:
                live_out[b.index], live_in[b.index] = out, inn
                changed = True
    return live_out


def _successors(b: Block) -> list[int]:
    t = b.term
    if t.kind is TermKind.EXIT:
        return []
    if t.kind is TermKind.BRANCH:
        return [t.target, t.fallthrough]
    return [t.target]


def encode_block(block: Block, live_out: set[int], machine: MachineConfig = DEFAULT_MACHINE,
                 live_preds: set[int] | None = None) -> list[int]:
    """The block's ROM pieces as 32-bit integers."""
    S = machine.slots_per_block
    if len(block.instrs) > S:
        raise EncodeError(f"B{block.index}: {len(block.instrs)} instructions > {S} slots")
    npieces = pieces_per_block(machine)
    bits = [0] * (32 * npieces)
    last_reg: dict[int, int] = {}  # register -> slot that last wrote it (so far)
    last_pred: dict[int, int] = {}

    def src_code(s, slot) -> int:
        if isinstance(s, Reg):
            if s.index == 0:
                return SRC_ZERO
            if s.index in last_reg:
                return SRC_FWD + last_reg[s.index]
            return s.index
        if isinstance(s, Special):
            if s.name in SCALED_SPECIALS:
                return SRC_SCALED + SCALED_SPECIALS.index(s.name)
            return SRC_SPECIAL + SPECIAL_REGISTERS.index(s.name)
        if isinstance(s, Imm):
            return SRC_IMM
        raise EncodeError(f"B{block.index} slot {slot}: operand {s!r}")

    def pred_code(p: Pred | None) -> tuple[int, int]:
        if p is None:
            return PSRC_NONE, 0
        code = PSRC_FWD + last_pred[p.index] if p.index in last_pred else PSRC_FILE + p.index
        return code, int(p.negated)

    writers: list[int | None] = []
    for slot, ins in enumerate(block.instrs):
        base = slot * SLOT_BITS
        f = {name: 0 for name in SLOT_FIELDS}
        f["op"] = OPCODES.index(ins.op)
        f["signed"] = int(ins.signed)
        f["cmp"] = CMPS.index(ins.cmp) if ins.cmp else 0
        f["mode"] = MODES.index(ins.mode) if ins.mode else 0
        srcs = list(ins.srcs)
        imms = [s.value for k, s in enumerate(srcs) if isinstance(s, Imm) and not (ins.op is Op.SHFL and k >= 2)]
        if len(set(imms)) > 1:
            raise EncodeError(f"B{block.index} slot {slot}: two different immediates in `{ins}`")
        f["imm"] = imms[0] if imms else 0
        if ins.op is Op.SHFL:
            c, member = srcs[2].value, srcs[3].value
            lb = machine.lane_bits
            f["clamp"] = c & ((1 << lb) - 1)
            f["segmask"] = (c >> 8) & ((1 << lb) - 1)
            f["member"] = member & ((1 << machine.lanes) - 1)
            srcs = srcs[:2]
        if ins.op in (Op.LD, Op.ST, Op.ATOM_ADD):
            if not -512 <= ins.offset <= 511:
                raise EncodeError(f"B{block.index} slot {slot}: offset {ins.offset} out of range")
            f["offset"] = ins.offset & 0x3FF
        for name, s in zip(("src_a", "src_b", "src_c"), srcs):
            f[name] = src_code(s, slot)
        if ins.guard is not None and ins.dst is not None and not ins.writes_pred:
            f["src_d"] = src_code(Reg(ins.dst), slot)  # the old value, kept where the guard fails
        f["guard"], f["guard_neg"] = pred_code(ins.guard)
        ps = list(ins.psrcs) + [None, None]
        f["p0"], f["p0_neg"] = pred_code(ps[0])
        f["p1"], f["p1_neg"] = pred_code(ps[1])
        if ins.writes_pred:
            f["dst"] = ins.dst
            if ins.guard is not None:
                f["pold"] = pred_code(Pred(ins.dst))[0]
        elif ins.dst is not None:
            f["dst"] = ins.dst
        if ins.pdst is not None:
            f["pdst"], f["pdst_valid"] = ins.pdst, 1
            if ins.guard is not None:
                f["pold"] = pred_code(Pred(ins.pdst))[0]
        for name, (off, w) in SLOT_FIELDS.items():
            _put(bits, base + off, w, f[name])
        # what this slot writes, for the slots after it
        if ins.writes_pred:
            last_pred[ins.dst] = slot
        elif ins.dst is not None and ins.dst != 0:
            last_reg[ins.dst] = slot
        if ins.pdst is not None:
            last_pred[ins.pdst] = slot
        writers.append(ins.dst if (ins.dst is not None and not ins.writes_pred and ins.dst != 0) else None)
    # emit a slot's register result if it is the block's last write of a live-out register
    for slot, r in enumerate(writers):
        if r is not None and r in live_out and last_reg.get(r) == slot:
            off, _ = SLOT_FIELDS["emit"]
            bits[slot * SLOT_BITS + off] = 1
    t = block.term
    fields = term_fields(machine)
    tf = {name: 0 for name in fields}
    tf["kind"] = TERM_KINDS.index(t.kind)
    tf["target"] = t.target or 0
    tf["fallthrough"] = t.fallthrough or 0
    tf["pred"], tf["pred_neg"] = pred_code(t.pred)
    tf["reconv"] = t.reconv or 0
    tf["reconv_valid"] = int(t.reconv is not None)
    # the predicate file goes back down only when a predicate it wrote is read later
    tf["pemit"] = int(bool(set(last_pred) & (live_preds if live_preds is not None else set(last_pred))))
    tbase = term_piece(machine) * 32
    for name, (off, w) in fields.items():
        _put(bits, tbase + off, w, tf[name])
    pbase = pfinal_piece(machine) * 32
    for p in range(machine.preds):
        _put(bits, pbase + 4 * p, 4, pred_code(Pred(p))[0])
    return [sum(bits[32 * k + i] << i for i in range(32)) for k in range(npieces)]


def encode_program(program: Program, machine: MachineConfig = DEFAULT_MACHINE) -> list[list[int]]:
    """ROM pieces of every block (a list per block)."""
    live = live_out_registers(program.blocks)
    plive = live_out_predicates(program.blocks)
    return [encode_block(b, live[b.index], machine, plive[b.index]) for b in program.blocks]
