"""The one definition of our SIMT machine: sizes that every part imports.

The reference interpreter, the PTX lowering, the weight compiler and the token
vocabulary all read their limits from a :class:`MachineConfig`. Its field defaults are
the published machine (4 lanes, 16 register rows with row 0 reading zero, a 32-block ROM,
126 memory words); every size is a parameter.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

SPECIAL_REGISTERS = ("tid.x", "ntid.x", "ctaid.x", "nctaid.x", "laneid", "warpid")
"""PTX special registers the machine provides (``%tid.x`` ... ``%warpid``)."""

SCALED_SPECIALS = ("tid.x*4",)
"""Operands derived from special registers for free: ``%tid.x * 4`` is the byte offset of
element tid of a word array, the most common address (it saves a register and a step)."""

OPERAND_SPECIALS = SPECIAL_REGISTERS + SCALED_SPECIALS


@dataclass(frozen=True)
class MachineConfig:
    """Sizes of the SIMT machine.

    ``regs`` counts register rows per lane including row 0, which always reads 0, so a
    kernel may use ``regs - 1`` registers. ``slots_per_block`` is how many instructions
    one machine block (one ``EXEC`` step) holds: the pipeline depth.
    """

    lanes: int = 4  # warpSize
    max_warps: int = 4  # warps per thread block
    regs: int = 16  # register rows per lane; row 0 reads 0
    preds: int = 8  # predicate registers per lane
    rom_blocks: int = 32  # program ROM size, in machine blocks
    slots_per_block: int = 3  # instructions per machine block (pipeline stages)
    mem_words: int = 126  # 32-bit words for global arrays and __shared__ variables
    word_bits: int = 32
    step_budget: int = 4096  # EXEC steps per launch before the launch is stopped

    @property
    def max_block_dim(self) -> int:
        return self.lanes * self.max_warps

    @property
    def usable_regs(self) -> int:
        return self.regs - 1

    @property
    def word_mask(self) -> int:
        return (1 << self.word_bits) - 1

    @property
    def lane_bits(self) -> int:
        return max(1, (self.lanes - 1).bit_length())

    def to_dict(self) -> dict:
        return asdict(self)


PUBLISHED_MACHINE = MachineConfig()
"""The published machine: 4 lanes, 4 warps (16 threads per block), 32 ROM blocks, 126 words."""

ONE_SLOT_MACHINE = MachineConfig(slots_per_block=1)
"""The published machine with one instruction per block instead of three: every other
limit is the published machine's. Its circuit needs 25 layers instead of 45 (both fit Qwen3.5-2B's
shape: ``qwengpu-mlx build [--machine one-slot] --shape qwen3.5-2b``, docs/CIRCUIT.md,
"Dense checkpoints"); launches take more steps (one per instruction) and more tokens."""

LARGE_MACHINE = MachineConfig(max_warps=8, rom_blocks=128, mem_words=1024)
"""The published machine grown where ordinary kernels stopped: 128 ROM blocks (4x: room
for loops, unrolled code and division routines), 8 warps (``blockDim.x`` up to 32, the
smallest block most CUDA code uses) and 1,024 memory words (8x). Registers fill a head's
128 key rows (8 warps x 16 registers) and so does the ROM (one row per block); memory
spreads over 8 heads of 128 words per slot and lane."""

DEFAULT_MACHINE = LARGE_MACHINE
"""The machine a launch, a build and the command line use when none is named: the large
machine, whose sizes fit the kernels people write first (``--machine published`` keeps the
published sizes). Switching it is this one line (and the docs): code and tests that mean a
particular machine name it (``PUBLISHED_MACHINE``, ``LARGE_MACHINE``)."""

MACHINES = {"default": DEFAULT_MACHINE, "published": PUBLISHED_MACHINE, "large": LARGE_MACHINE,
            "one-slot": ONE_SLOT_MACHINE}
"""The named machines the command line offers (``--machine``); ``default`` is :data:`DEFAULT_MACHINE`."""


def machine_name(machine: MachineConfig, unknown: str = "custom") -> str:
    """The machine's own name in :data:`MACHINES` (never the ``default`` alias, which is
    another name of one of them); ``unknown`` for sizes no named machine has."""
    return next((name for name, m in MACHINES.items() if m == machine and name != "default"), unknown)


def to_signed(value: int, bits: int = 32) -> int:
    """Two's-complement reading of the low ``bits`` bits of ``value``."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def to_unsigned(value: int, bits: int = 32) -> int:
    return value & ((1 << bits) - 1)
