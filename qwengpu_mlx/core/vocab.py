"""The launch vocabulary: every token the circuit reads or writes, with its fields.

One source of truth for host, compiler and dashboard. A token is a kind plus small
integer fields; ids are dense and fixed by the machine definition. Records (a header
and up to three 11-bit chunks; a ``VAL`` or ``MEM`` the model writes whose value fits
11 bits, header and ``C0`` only, ``short_record``) carry 32-bit payloads: the causal conv1d of the
Gated DeltaNet combines a record's tokens into one state-row write (docs/CIRCUIT.md).

=========  ===============================  ============================================
kind       fields                           meaning
=========  ===============================  ============================================
PROG       block, piece                     header: ROM row ``block``, piece ``piece``
MEM        item, addr                       header: memory word ``addr``; item 0..15 is
                                            the (slot, lane) that wrote it, INPUT an input
C0 C1 C2   value                            payload chunks: bits 0-10, 11-21, 22-31
DIMS       ntid                             launch geometry: blockDim.x
GRID       nctaid                           launch geometry: gridDim.x
GO         -                                end of the prompt
CTA        ctaid                            start thread block ``ctaid``
EXEC       block, warp, mask                run ``block`` for ``warp`` on lanes ``mask``
VAL        slot, lane                       header: register result of (slot, lane)
PVAL       lane, bits                       predicate file of ``lane`` after the step
ENT        item, warp, level                header: SIMT stack entry (pc, rpc, mask)
WST        warp                             header: warp status (state, depth, exited
                                            lanes, resume block and mask)
STOP       -                                end of the launch
FAULT      code                             the launch stopped: see FAULT_CODES
VALU       slot                             header: slot's register result, the same in
                                            every lane the last EXEC ran
=========  ===============================  ============================================
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property, lru_cache

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig

CHUNK_BITS = (11, 11, 10)
CHUNK_KINDS = ("C0", "C1", "C2")  # the payload chunk tokens, in order
RECORD_TOKENS = 1 + len(CHUNK_KINDS)  # a record: its header and the payload chunks
RECORD_KINDS = ("VAL", "VALU", "MEM", "ENT", "WST", "PROG")  # headers followed by the three chunks
SHORT_KINDS = ("VAL", "VALU", "MEM")  # records the model may end at C0 (``short_record``)
CHUNK_SHIFT = (0, 11, 22)
FAULT_CODES = {
    0: "SIMT stack overflow (branches nested too deep for the model's stack)",
    1: "memory access out of range",
    2: "barrier deadlock (a warp waits at __syncthreads while some of its lanes cannot reach it)",
}
MAX_GRID = 64  # gridDim.x the model backend runs (CTA tokens)
STACK_LEVELS = 8  # SIMT stack entries per warp in the model
ENT_ITEMS = 3  # stack entries one step can write


@dataclass(frozen=True)
class Token:
    kind: str
    fields: tuple[tuple[str, int], ...] = ()

    def get(self, name: str) -> int:
        return dict(self.fields)[name]

    def __str__(self) -> str:
        if not self.fields:
            return self.kind
        return f"{self.kind}(" + ", ".join(f"{v}" for _, v in self.fields) + ")"


@dataclass(frozen=True)
class Segment:
    """One kind's ids: ``offset`` onwards, its fields counted in order, the last fastest
    (``fields``: name, first value, how many values)."""

    kind: str
    offset: int
    fields: tuple[tuple[str, int, int], ...]

    @property
    def size(self) -> int:
        n = 1
        for _, _, count in self.fields:
            n *= count
        return n

    def index(self, fields: dict) -> int:
        """The id of this kind's token with ``fields`` (KeyError: no such token)."""
        if tuple(fields) != tuple(name for name, _, _ in self.fields):
            raise KeyError(Token(self.kind, tuple(fields.items())))
        i = 0
        for (name, first, count) in self.fields:
            v = fields[name] - first
            if not 0 <= v < count:
                raise KeyError(Token(self.kind, tuple(fields.items())))
            i = i * count + v
        return self.offset + i

    def token(self, token_id: int) -> Token:
        """The token of ``token_id``, one of this segment's ids."""
        rest, values = token_id - self.offset, []
        for name, first, count in reversed(self.fields):
            rest, v = divmod(rest, count)
            values.append((name, first + v))
        return Token(self.kind, tuple(reversed(values)))


class Vocab:
    """Token ids <-> tokens for one machine configuration.

    Ids are computed from each kind's segment (its first id and its fields' ranges), not
    looked up in a table of every token: the large machine's vocabulary has 37,000 tokens,
    and making each one cost a cold ``run`` a tenth of a second; :attr:`tokens` and
    :attr:`ids` are built only when something asks for all of them."""

    def __init__(self, machine: MachineConfig = DEFAULT_MACHINE):
        m = machine
        self.machine = m
        self.pieces = pieces_per_block(m)
        self.input_item = m.slots_per_block * m.lanes
        self.segments: list[Segment] = []

        def add(kind, *fields):
            offset = self.segments[-1].offset + self.segments[-1].size if self.segments else 0
            self.segments.append(Segment(kind, offset, fields))

        add("PROG", ("block", 0, m.rom_blocks), ("piece", 0, self.pieces))
        add("MEM", ("item", 0, self.input_item + 1), ("addr", 0, m.mem_words))
        for j, bits in enumerate(CHUNK_BITS):
            add(f"C{j}", ("value", 0, 1 << bits))
        add("DIMS", ("ntid", 1, m.max_block_dim))
        add("GRID", ("nctaid", 1, MAX_GRID))
        add("GO")
        add("CTA", ("ctaid", 0, MAX_GRID))
        add("EXEC", ("block", 0, m.rom_blocks), ("warp", 0, m.max_warps), ("mask", 1, (1 << m.lanes) - 1))
        add("VAL", ("slot", 0, m.slots_per_block), ("lane", 0, m.lanes))
        add("PVAL", ("lane", 0, m.lanes), ("bits", 0, 1 << m.preds))
        add("ENT", ("item", 0, ENT_ITEMS), ("warp", 0, m.max_warps), ("level", 0, STACK_LEVELS))
        add("WST", ("warp", 0, m.max_warps))
        add("STOP")
        add("FAULT", ("code", 0, len(FAULT_CODES)))
        add("VALU", ("slot", 0, m.slots_per_block))  # last, so that the ids before them stay as they were
        self._by_kind = {seg.kind: seg for seg in self.segments}
        self._offsets = [seg.offset for seg in self.segments]
        self._size = self.segments[-1].offset + self.segments[-1].size

    @cached_property
    def tokens(self) -> list[Token]:
        """Every token, in id order (built on first use: most launches never need it)."""
        return [seg.token(seg.offset + i) for seg in self.segments for i in range(seg.size)]

    @cached_property
    def ids(self) -> dict[Token, int]:
        """Every token's id (built on first use)."""
        return {t: i for i, t in enumerate(self.tokens)}

    def __len__(self) -> int:
        return self._size

    def id(self, kind: str, **fields) -> int:
        seg = self._by_kind.get(kind)
        if seg is None:
            raise KeyError(Token(kind, tuple(fields.items())))
        return seg.index(fields)

    def __getitem__(self, token_id: int) -> Token:
        i = operator.index(token_id)
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
            raise IndexError(f"token id {token_id} out of range (the vocabulary has {self._size})")
        return self.segments[bisect_right(self._offsets, i) - 1].token(i)

    def names(self) -> list[str]:
        """Printable, unique token strings (the tokenizer's vocabulary)."""
        return [f"<|{t}|>".replace(" ", "") for t in self.tokens]

    def record(self, header_id: int, value: int, *, short: bool = False) -> list[int]:
        """A header followed by the three chunks of a 32-bit value; ``short``: by ``C0``
        alone (a value that fits the first chunk, see ``short_record``)."""
        value &= 0xFFFFFFFF
        chunks = [self.id(f"C{j}", value=(value >> CHUNK_SHIFT[j]) & ((1 << CHUNK_BITS[j]) - 1)) for j in range(3)]
        if short:
            if value >> CHUNK_BITS[0]:
                raise ValueError(f"{value} does not fit a short record's {CHUNK_BITS[0]} bits")
            return [header_id, chunks[0]]
        return [header_id] + chunks


def short_record(kind: str, value: int, later_record: bool) -> bool:
    """Whether a record the model writes is short: header and ``C0``, no ``C1``/``C2``.

    A ``VAL``, ``VALU`` or ``MEM`` record, when its value fits the first chunk (0 .. 2^11-1) and
    another record of the same step follows it. The register and memory heads write
    three tokens after the header, from the chunks at their places; a ``C0`` not
    followed by ``C1`` leaves zeros there, the value's high bits. The record after it
    keeps that write before the next ``EXEC`` reads (docs/CIRCUIT.md, "Token protocol").
    """
    return kind in SHORT_KINDS and later_record and 0 <= (value & 0xFFFFFFFF) < (1 << CHUNK_BITS[0])


def record_end(kinds: list[str], i: int) -> int:
    """Where the record whose header is ``kinds[i]`` ends (one past its last token).

    A record header takes the three chunks after it, or a ``VAL``/``MEM`` header ``C0`` alone
    when no ``C1`` follows (a short record); any other token is a record of its own."""
    if kinds[i] not in RECORD_KINDS:
        return i + 1
    if kinds[i] in SHORT_KINDS and kinds[i + 1:i + 2] == ["C0"] and kinds[i + 2:i + 3] != ["C1"]:
        return i + 2
    return min(len(kinds), i + 1 + len(CHUNK_KINDS))


def pieces_per_block(machine: MachineConfig) -> int:
    """ROM pieces (32-bit rows of separate heads) per block: 4 per slot, terminator, pfinal."""
    return 4 * machine.slots_per_block + 2


def chunk_value(tokens: list[Token]) -> int:
    """The 32-bit value carried by chunk tokens C0, C1, C2 (a short record's C0 alone: its high bits 0)."""
    return sum(t.get("value") << CHUNK_SHIFT[j] for j, t in enumerate(tokens))


@lru_cache(maxsize=4)
def vocab_for(machine: MachineConfig = DEFAULT_MACHINE) -> Vocab:
    return Vocab(machine)
