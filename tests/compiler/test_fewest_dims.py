"""The dense form of the large machine's circuit: binary EXEC blocks and ENT rows, decoded by the heads.

A dense checkpoint pays for every residual dim in every layer, so the large machine's
circuit for one (``machine_circuit.fewest_dims``) carries the EXEC block and the ENT
header's (warp, level) in binary and lets the ROM and stack heads decode them with their
own SiLU, where the compact form has one-hots (128 and 64 dims). Checked from what the
tokens mean (the vocabulary's fields), not from the code that writes them: an EXEC token's
block digits name its block, a ROM head's query is positive on that block's row alone,
and a stack head's key is positive on the ENT header's (warp, level) row alone, on no row
for any other token.
"""

from __future__ import annotations

import numpy as np
import pytest

from qwengpu_mlx.compiler.context import context
from qwengpu_mlx.compiler.control import control_state
from qwengpu_mlx.compiler.fetch import read_rom
from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS
from qwengpu_mlx.compiler.machine_circuit import NARROW, fewest_dims
from qwengpu_mlx.compiler.sizing import QWEN35_2B
from qwengpu_mlx.compiler.wiring import CircuitWiring
from qwengpu_mlx.core.machine import LARGE_MACHINE, ONE_SLOT_MACHINE, PUBLISHED_MACHINE
from qwengpu_mlx.core.vocab import STACK_LEVELS


def test_only_the_large_machine_takes_the_fewest_dims_form():
    assert fewest_dims(LARGE_MACHINE, NARROW) and fewest_dims(LARGE_MACHINE, QWEN35_2B)
    assert not fewest_dims(PUBLISHED_MACHINE, QWEN35_2B) and not fewest_dims(ONE_SLOT_MACHINE, QWEN35_2B)


@pytest.fixture(scope="module")
def wiring():
    cw = CircuitWiring(LARGE_MACHINE, NARROW, DEFAULT_LEVELS, fewest_dims=True)
    ctx = context(cw, 0)
    read_rom(cw, ctx, 1, "rom", {0: [0]})
    control_state(cw, ctx, 1)
    return cw, ctx


def _head(cw, name):
    return next(h for lp in cw.plan.layers if lp.mixer for h in lp.mixer.heads if h.name == name)


def _rows(terms, x: dict, rows: int) -> np.ndarray:
    """Each channel's pre-activation for residual values ``x`` (dim -> value), ONE2 = 1."""
    out = np.zeros(rows)
    for term in terms:
        row, d, w = term[0], term[1], term[-1]
        out[row] += w * x.get(d, 0.0)
    return out


def test_exec_tokens_carry_their_block_in_binary(wiring):
    cw, _ = wiring
    t = cw.t
    assert t.exec_b.width == 7 and t.ent_wl.width == 6  # 128 blocks; 8 warps x 8 levels
    for tok, row in zip(cw.vocab.tokens, t.embedding(cw.K)):
        if tok.kind == "EXEC":
            digits = [row.get(d, 0.0) for d in t.exec_b.dims]
            assert sum(int(b) << i for i, b in enumerate(digits)) == tok.get("block")


def test_a_rom_query_names_the_running_block_alone(wiring):
    cw, ctx = wiring
    h, G = _head(cw, "rom.piece0"), DEFAULT_LEVELS.decode_gain
    for block in (0, 1, 5, 64, 100, 127):
        x = {d: float(block >> i & 1) for i, d in enumerate(ctx.block.dims)} | {cw.lay.ONE2: 1.0}
        pre = _rows(h.query_terms, x, h.rows)
        assert pre[block] == G / 2 and np.all(np.delete(pre, block) <= -G / 2)


def test_a_stack_key_names_the_ent_headers_row_alone(wiring):
    cw, _ = wiring
    h, G = _head(cw, "stack.level0"), DEFAULT_LEVELS.decode_gain
    seen = 0
    for tok, row in zip(cw.vocab.tokens, cw.t.embedding(cw.K)):
        pre = _rows(h.key_terms, dict(row) | {cw.lay.ONE2: 1.0}, h.rows)
        if tok.kind == "ENT":
            r = tok.get("warp") * STACK_LEVELS + tok.get("level")
            assert pre[r] == G / 2 and np.all(np.delete(pre, r) <= -G / 2)
            seen += 1
        else:
            assert np.all(pre <= -G / 2), tok
    assert seen
