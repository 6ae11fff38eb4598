"""Which machine sizes the compiled circuit supports, checked before any weight is computed.

:class:`~qwengpu_mlx.core.machine.MachineConfig` makes every size a parameter, and the
reference interpreter and the PTX lowering honour all of them. The weight compiler
does not yet: some of its fields are wired at a fixed width (a 5-bit pc, 2-bit warp
numbers, 4-lane shuffles, a 7-bit word address), and a machine outside those widths
either fails deep inside a builder or, worse, builds a circuit that runs wrong (with
``max_warps=8`` a 32-thread kernel wrote ``[1, 0, 0, ...]`` instead of ``[1, 4, 7, ...]``:
``blockDim.x = 32`` does not fit the circuit's 5-bit ``ntid`` and warps 4..7 have no
2-bit EXEC warp number).

:func:`check_circuit_supports` refuses such a machine up front with a
:class:`~qwengpu_mlx.core.errors.ResourceError` that names the field, the value and the
supported range. :data:`LIMITS` is the table behind it: per field the supported values,
why the limit is what it is, and which values were run exact through the model (the
launch's whole token stream checked against the reference, records included; see
``tests/runtime/test_machine_support.py`` and docs/MACHINE.md, "Limits of the circuit").
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from qwengpu_mlx.core.errors import ResourceError
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig


@dataclass(frozen=True)
class FieldLimit:
    """The values of one MachineConfig field the circuit supports: ``lo..hi`` (``hi`` None: no bound)."""

    field: str
    lo: int
    hi: int | None
    reason: str  # why, in a few words (the error message's)
    detail: str  # why, with the places in the compiler that fix the width
    tested: tuple[int, ...] = ()  # values run exact through the model (the default among them)
    circuit: bool = True  # False: a host-side limit, the weights do not depend on the field

    def allows(self, value: int) -> bool:
        return self.lo <= value and (self.hi is None or value <= self.hi)

    @property
    def range_text(self) -> str:
        if self.hi is None:
            return f"{self.field} >= {self.lo}"
        if self.lo == self.hi:
            return f"{self.field} = {self.lo} only"
        return f"{self.field} from {self.lo} to {self.hi}"


LIMITS: tuple[FieldLimit, ...] = (
    FieldLimit(
        "lanes", 4, 4, "warp masks and records are 4 lanes wide",
        "the shuffle network is built for 4 lanes (compiler/alu_shfl.py, LANES = 4; lanes = 2 fails "
        "there) and the ROM's shuffle fields are sized for them (encoding.py: a 4-bit member mask, 2-bit "
        "clamp and segmask); the WST/ENT/next-token records follow the machine (records.py) but fill 32 "
        "bits at 8 lanes; the host's atomic routines run one round per lane of the widest named "
        "machine and tell lanes apart by %tid.x*4 & 4*(lanes-1), so lanes is a power of two "
        "(host/translate_atomics.py, LANES); kernels see CUDA's 32-lane warp whatever the machine's "
        "lanes: a shuffle that leaves 4 lanes is an exchange through shared memory between barriers "
        "(host/prelude_warps.h), the 4-lane shfl only where it gives the 32-lane result (host/warp_ops.py)",
        (4,)),
    FieldLimit(
        "max_warps", 1, 8, "registers are rows (warp, reg) of a head with 128 key rows",
        "the register heads key one row per (warp, register): 8 warps of 16 registers fill a "
        "Qwen3.5-2B head's 128 rows; warp numbers and blockDim.x take their widths from the machine "
        "(records.warp_bits, tokens.ntid_bits: 6 bits for blockDim.x = 32); a 2-D or 3-D block runs as "
        "its x*y*z threads numbered linearly (host/launch_dims.py), so the bound is on that product",
        (2, 4, 8)),
    FieldLimit(
        "regs", 2, 16, "register numbers are a 4-bit ROM field and row 0 reads zero",
        "dst is a 4-bit ROM field and operand source codes 1..15 are registers, 16 and up name specials, "
        "the immediate and forwarded results (encoding.py, SLOT_FIELDS, SRC_SPECIAL = 16); at least 2 "
        "rows give a kernel one register",
        (9, 16)),
    FieldLimit(
        "preds", 1, 8, "predicate numbers are a 3-bit ROM field and the pfinal piece holds 8",
        "pdst is a 3-bit ROM field, predicate source codes 1..8 are the file and 9 and up forwarded "
        "results (encoding.py, PSRC_FWD = 9), and the pfinal ROM piece holds a 4-bit source code for "
        "each of at most 8 predicates",
        (4, 8)),
    FieldLimit(
        "rom_blocks", 2, 128, "a ROM head has one row per block under the key dim of 128",
        "each ROM head keys one row per block and a Qwen3.5-2B head has 128 key rows; the terminator's "
        "block fields take max(5, pc bits) (encoding.py, term_fields: 30 of 32 bits at 128 blocks), and "
        "the control unit, the EXEC emission and the WST/ENT records size their pc fields from "
        "rom_blocks (records.pc_bits)",
        (4, 16, 32, 128)),
    FieldLimit(
        "slots_per_block", 1, 3, "operand source codes forward the results of at most 3 slots",
        "source codes 23..25 forward the results of slots 0..2 of the block and code 26 is %tid.x*4 "
        "(encoding.py, SRC_FWD, SRC_SCALED): a fourth slot has no forwarding code",
        (1, 2, 3)),
    FieldLimit(
        "mem_words", 1, 1024, "word addresses are at most 10 bits wide in the circuit",
        "the memory thermometer writes a word's binary digits (compiler/slot.py, mem_word_bits: 7 up to "
        "128 words, 10 for 1,024) from the low bits of a + offset (mem_address_bits: 3 more), and the memory "
        "heads of each slot and lane hold a head's key rows of words each (8 heads of 128 rows for 1,024)",
        (64, 126, 128, 1024)),
    FieldLimit(
        "word_bits", 32, 32, "records carry 32-bit payloads and the ALUs are 32 bits wide",
        "a record's payload is three chunks of 11, 11 and 10 bits (vocab.py, CHUNK_BITS), and the "
        "adders, multiplier, shifter, memory and register heads are 32 bits wide; kernels' 8- and "
        "16-bit code runs on them as the host lowers it (host/narrow.py: a narrow value's low bits in a "
        "32-bit register, extended where the upper bits matter) and a char or short array keeps one "
        "element per memory word (host/narrow_memory.py)",
        (32,)),
    FieldLimit(
        "step_budget", 1, None, "a launch may run at least one step",
        "host-side: the launch loop stops after step_budget EXEC steps; the circuit's weights do not "
        "depend on it",
        (), circuit=False),
)

_BY_FIELD = {lim.field: lim for lim in LIMITS}
assert set(_BY_FIELD) == {f.name for f in fields(MachineConfig)}, "every MachineConfig field needs a limit"
assert all(lim.allows(getattr(DEFAULT_MACHINE, lim.field)) for lim in LIMITS), "the default machine is supported"


def limit_for(field: str) -> FieldLimit:
    """The :class:`FieldLimit` of a MachineConfig field."""
    return _BY_FIELD[field]


def unsupported_fields(machine: MachineConfig) -> list[str]:
    """One sentence per field of ``machine`` the circuit does not support (empty: all supported)."""
    problems = []
    for lim in LIMITS:
        value = getattr(machine, lim.field)
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{lim.field} must be an integer, not {value!r}")
        elif not lim.allows(value):
            what = "the circuit supports" if lim.circuit else "the machine needs"
            problems.append(f"{what} {lim.range_text} ({lim.reason}): {lim.field} = {value} is refused")
    return problems


def check_circuit_supports(machine: MachineConfig) -> None:
    """Refuse, before any weight is computed, a machine the circuit cannot run exactly.

    Raises :class:`~qwengpu_mlx.core.errors.ResourceError` naming every unsupported field,
    its value and the supported range (see :data:`LIMITS`); returns None otherwise.
    """
    problems = unsupported_fields(machine)
    if problems:
        raise ResourceError("unsupported machine: " + "; ".join(problems))


__all__ = ["FieldLimit", "LIMITS", "check_circuit_supports", "limit_for", "unsupported_fields"]
