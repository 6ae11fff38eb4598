"""The compact sharing level's one routine for fma and division (``host/float_unit.py``):
each entry bit for bit what its own routine computes (NumPy's float32 division; the
fma against the exact value rounded once), through the one-lane harness of the IR."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np

from qwengpu_mlx.core.machine import LARGE_MACHINE
from qwengpu_mlx.host import float_unit
from qwengpu_mlx.host.ir import LTerm, VReg
from tests.host.test_float_arith import EDGES, hardware, operand_pairs
from tests.host.test_float_arith_fma import bits
from tests.support import oracles_float as f32
from tests.support.cli import needs_clang
from tests.support.float_routines import emitter, run
from tests.support.launching import bound_program

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kernels"

ENTRIES = {float_unit.DIVISION: "$unit_division", float_unit.SIGNED_TO_FLOAT: "$unit_from_int",
           float_unit.UNSIGNED_TO_FLOAT: "$unit_from_unsigned"}


def _unit(a: int, b: int, c: int, division: bool = False, entry: str | None = None) -> int:
    """``dst`` after the unit runs from its fma entry, or from another (``entry``; the division's)."""
    entry = float_unit.DIVISION if division else entry
    items = float_unit.unit(emitter(), "%d", VReg("%a"), VReg("%b"), VReg("%c"), entries=dict(ENTRIES))
    start = [LTerm("bra", ENTRIES[entry], None, 1)] if entry else []
    return run(start + items, {"%a": a, "%b": b, "%c": c}).regs["%d"]


def test_the_division_entry_is_float32_division():
    bad = [(hex(a), hex(b)) for a, b in operand_pairs(38)
           if _unit(a, b, 0, division=True) != hardware(np.divide, a, b)]
    assert not bad, f"{len(bad)} wrong, e.g. {bad[:5]}"


def test_subnormal_quotients_round_once():
    """Quotients below the normal range, where the tails' shifts differ most."""
    cases = [(0x00000003, bits(2.0)), (0x00000001, bits(2.0)), (0x00800000, bits(3.0)), (bits(1e-30), bits(1e10)),
             (bits(1.0), 0x7F7FFFFF), (bits(3.0), 0x7F000001), (0x007FFFFF, bits(1.0000001)),
             (0x00000001, bits(0.5)), (bits(1e-38), bits(7.0))]
    bad = [(hex(a), hex(b)) for a, b in cases if _unit(a, b, 0, division=True) != hardware(np.divide, a, b)]
    assert not bad, bad


def test_the_fma_entry_is_the_fma():
    rng = np.random.default_rng(39)
    triples = [(a, b, c) for a in EDGES[::3] for b in EDGES[1::3] for c in EDGES[::2]]
    triples += [tuple(int(v) for v in rng.integers(0, 2 ** 32, 3)) for _ in range(300)]
    bad = [tuple(map(hex, t)) for t in triples if _unit(*t, division=False) != f32.fma(*t)]
    assert not bad, f"{len(bad)} wrong, e.g. {bad[:5]}"


def _float_of(n: int) -> int:
    """The float nearest the integer ``n``, ties to even (a Fraction's exact rounding)."""
    return f32.to_binary32(Fraction(n))


def test_the_integer_entries_round_to_nearest_even():
    rng = random.Random(40)
    signed = [0, 1, -1, 7, -12, 2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 24 + 1), 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 64, 2 ** 31 - 65,
              0x7FFFFFC0, 0x7FFFFF80 + 0x40] + [rng.randint(-2 ** 31, 2 ** 31 - 1) for _ in range(300)]
    signed += [rng.choice((-1, 1)) * (rng.getrandbits(rng.randint(1, 31)) | 1) for _ in range(300)]
    bad = [n for n in signed if _unit(n & 0xFFFFFFFF, 0, 0, entry=float_unit.SIGNED_TO_FLOAT) != _float_of(n)]
    assert not bad, bad[:5]
    unsigned = [0, 1, 2 ** 32 - 1, 2 ** 31, 2 ** 32 - 128, 2 ** 32 - 129, 2 ** 24 + 1] + [rng.getrandbits(32) for _ in range(300)]
    bad = [n for n in unsigned if _unit(n, 0, 0, entry=float_unit.UNSIGNED_TO_FLOAT) != _float_of(n)]
    assert not bad, bad[:5]


@needs_clang
def test_a_softmax_shape_fits_only_with_the_division_an_entry_of_the_fma():
    """``float_max_sum_norm`` (a block max, a block sum, a division per element) lowers at
    the compact level: one routine, entered for the division too, within the 128 blocks."""
    spec = json.loads((EXAMPLES / "float_max_sum_norm.json").read_text())
    prog = bound_program(EXAMPLES / "float_max_sum_norm.cu", args=spec["args"], block=spec["block"],
                         machine=LARGE_MACHINE)
    entries = sorted((b.label or "").rstrip("0123456789_") for b in prog.blocks
                     if (b.label or "").startswith("$froutine_"))
    assert entries == ["$froutine_fma", "$froutine_fma_div"]
    assert len(prog.blocks) <= LARGE_MACHINE.rom_blocks
