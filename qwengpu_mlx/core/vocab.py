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

from dataclasses import dataclass
from functools import lru_cache

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


class Vocab:
    """Token ids <-> tokens for one machine configuration."""

    def __init__(self, machine: MachineConfig = DEFAULT_MACHINE):
        m = machine
        self.machine = m
        self.pieces = pieces_per_block(m)
        self.input_item = m.slots_per_block * m.lanes
        toks: list[Token] = []

        def add(kind, **fields):
            toks.append(Token(kind, tuple(fields.items())))

        for b in range(m.rom_blocks):
            for p in range(self.pieces):
                add("PROG", block=b, piece=p)
        for item in range(self.input_item + 1):
            for a in range(m.mem_words):
                add("MEM", item=item, addr=a)
        for j, bits in enumerate(CHUNK_BITS):
            for v in range(1 << bits):
                add(f"C{j}", value=v)
        for n in range(1, m.max_block_dim + 1):
            add("DIMS", ntid=n)
        for n in range(1, MAX_GRID + 1):
            add("GRID", nctaid=n)
        add("GO")
        for c in range(MAX_GRID):
            add("CTA", ctaid=c)
        for b in range(m.rom_blocks):
            for w in range(m.max_warps):
                for mask in range(1, 1 << m.lanes):
                    add("EXEC", block=b, warp=w, mask=mask)
        for s in range(m.slots_per_block):
            for lane in range(m.lanes):
                add("VAL", slot=s, lane=lane)
        for lane in range(m.lanes):
            for bits in range(1 << m.preds):
                add("PVAL", lane=lane, bits=bits)
        for item in range(ENT_ITEMS):
            for w in range(m.max_warps):
                for level in range(STACK_LEVELS):
                    add("ENT", item=item, warp=w, level=level)
        for w in range(m.max_warps):
            add("WST", warp=w)
        add("STOP")
        for code in FAULT_CODES:
            add("FAULT", code=code)
        for s in range(m.slots_per_block):  # last, so that the ids before them stay as they were
            add("VALU", slot=s)
        self.tokens = toks
        self.ids = {t: i for i, t in enumerate(toks)}

    def __len__(self) -> int:
        return len(self.tokens)

    def id(self, kind: str, **fields) -> int:
        return self.ids[Token(kind, tuple(fields.items()))]

    def __getitem__(self, token_id: int) -> Token:
        return self.tokens[token_id]

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
