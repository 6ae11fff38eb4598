"""Bit layouts of the launch's records, derived from the machine: one place for all.

A record (``vocab.py``) carries a 32-bit payload in three chunks. What the bits of that
payload mean is defined here, for every record the control unit writes, and every
part that reads or writes them uses these layouts: the compiler (which wires the
gates that set the bits), the host's expectation of a launch (``runtime/expect.py``)
and the dashboard's decoder (``tui/decode.py``). No other module spells an offset.

* ``WST(warp)``: a warp's status: ``ready``, ``wait``, ``done`` flags, its stack depth
  one-hot (``STACK_LEVELS`` bits), its exited lanes, and the block and mask it resumes
  at after a barrier.
* ``ENT(item, warp, level)``: a SIMT stack entry: pc, reconvergence pc (+ valid; not
  valid means "reconverge at exit") and mask.
* the latched next token (one internal row, no token of its own): the next EXEC's
  block, warp and mask, then one flag per kind (EXEC, CTA, STOP, FAULT 0-2).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig
from qwengpu_mlx.core.vocab import STACK_LEVELS


@dataclass(frozen=True)
class Field:
    name: str
    offset: int
    width: int

    def get(self, value: int) -> int:
        return (value >> self.offset) & ((1 << self.width) - 1)

    def __getitem__(self, i: int) -> int:
        """Payload bit of the field's bit ``i``."""
        if not 0 <= i < self.width:
            raise IndexError(f"{self.name}: bit {i} of {self.width}")
        return self.offset + i


@dataclass(frozen=True)
class RecordLayout:
    """Named, consecutive bit fields of one record's payload."""

    name: str
    fields: tuple[Field, ...]

    @property
    def bits(self) -> int:
        return sum(f.width for f in self.fields)

    def __getattr__(self, name: str) -> Field:
        for f in self.__dict__.get("fields", ()):
            if f.name == name:
                return f
        raise AttributeError(name)

    def pack(self, **values: int) -> int:
        """The payload with each named field set (unnamed fields 0); refuses overflow."""
        out = 0
        names = {f.name for f in self.fields}
        unknown = set(values) - names
        if unknown:
            raise KeyError(f"{self.name} record has no field {sorted(unknown)}")
        for f in self.fields:
            v = int(values.get(f.name, 0))
            if not 0 <= v < (1 << f.width):
                raise ValueError(f"{self.name}.{f.name} = {v} does not fit {f.width} bits")
            out |= v << f.offset
        return out

    def unpack(self, value: int) -> dict[str, int]:
        return {f.name: f.get(value) for f in self.fields}


def _layout(name: str, widths: list[tuple[str, int]]) -> RecordLayout:
    fields, off = [], 0
    for fname, w in widths:
        fields.append(Field(fname, off, w))
        off += w
    if off > 32:
        raise ValueError(f"the {name} record needs {off} payload bits; a record carries 32")
    return RecordLayout(name, tuple(fields))


def pc_bits(machine: MachineConfig) -> int:
    """Bits of a ROM block index (a pc)."""
    return max(1, (machine.rom_blocks - 1).bit_length())


def warp_bits(machine: MachineConfig) -> int:
    return max(1, (machine.max_warps - 1).bit_length())


@lru_cache(maxsize=8)
def wst_layout(machine: MachineConfig = DEFAULT_MACHINE) -> RecordLayout:
    return _layout("WST", [("ready", 1), ("wait", 1), ("done", 1), ("depth", STACK_LEVELS),
                           ("exited", machine.lanes), ("pc", pc_bits(machine)), ("mask", machine.lanes)])


@lru_cache(maxsize=8)
def ent_layout(machine: MachineConfig = DEFAULT_MACHINE) -> RecordLayout:
    p = pc_bits(machine)
    return _layout("ENT", [("pc", p), ("rpc", p), ("rvalid", 1), ("mask", machine.lanes)])


NEXT_KINDS = ("EXEC", "CTA", "STOP", "FAULT0", "FAULT1", "FAULT2")


@lru_cache(maxsize=8)
def next_layout(machine: MachineConfig = DEFAULT_MACHINE) -> RecordLayout:
    """The latched next token: EXEC fields, then one flag per kind in NEXT_KINDS."""
    return _layout("next", [("block", pc_bits(machine)), ("warp", warp_bits(machine)), ("mask", machine.lanes)]
                   + [(k, 1) for k in NEXT_KINDS])


def wst_payload(machine: MachineConfig, *, state: str, depth: int | None, exited: int, pc: int = 0,
                mask: int = 0) -> int:
    """A WST payload from a warp's status (``state``: ready, wait or done)."""
    lay = wst_layout(machine)
    flags = {"ready": 0, "wait": 0, "done": 0}
    flags[state] = 1
    return lay.pack(**flags, depth=0 if depth is None else 1 << depth, exited=exited, pc=pc, mask=mask)


def ent_payload(machine: MachineConfig, *, pc: int, rpc: int | None, mask: int) -> int:
    """An ENT payload; ``rpc`` None means the entry reconverges at exit (not valid)."""
    return ent_layout(machine).pack(pc=pc, rpc=0 if rpc is None else rpc, rvalid=int(rpc is not None), mask=mask)


def describe_wst(value: int, machine: MachineConfig = DEFAULT_MACHINE) -> str:
    f = wst_layout(machine).unpack(value)
    state = [name for name, key in (("ready", "ready"), ("waiting", "wait"), ("done", "done")) if f[key]]
    depth = next((i for i in range(STACK_LEVELS) if f["depth"] >> i & 1), None)
    lanes = machine.lanes
    return (f"{'/'.join(state) or 'idle'}, depth {depth if depth is not None else '-'}, "
            f"exited {mask_bits(f['exited'], lanes)}, resume B{f['pc']} mask {mask_bits(f['mask'], lanes)}")


def describe_ent(value: int, machine: MachineConfig = DEFAULT_MACHINE) -> str:
    f = ent_layout(machine).unpack(value)
    rpc = f"B{f['rpc']}" if f["rvalid"] else "at exit"
    return f"pc B{f['pc']}, reconverge {rpc}, mask {mask_bits(f['mask'], machine.lanes)}"


def mask_bits(mask: int, lanes: int = 4) -> str:
    """Lane 0 first: ``1110`` means lanes 0, 1 and 2."""
    return "".join("1" if mask >> lane & 1 else "0" for lane in range(lanes))
