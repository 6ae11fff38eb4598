"""MLP units packed among the base's (``splice/units.py``).

Oracles: the groups' signs, read off the placed ``down_proj`` (every 32-slot group of
a row one sign), and the MLP itself: SwiGLU over the units in their new slots gives
the same outputs as in the compiler's order (to float rounding: the sum runs in another order)."""

from __future__ import annotations

import numpy as np

from qwengpu_mlx.splice.units import SLOT_GROUP, unit_slots


def _down() -> np.ndarray:
    """[dims 4, units 40]: dim 0 written +1 / -1 by alternating units (a value and its
    clear), dim 1 by +2 and +4, dim 2 by one unit that also writes dim 0; units 30.. idle."""
    d = np.zeros((4, 40), np.float32)
    d[0, 0:20:2], d[0, 1:20:2] = 1.0, -1.0
    d[1, 20:24] = [2.0, 4.0, 2.0, 4.0]
    d[2, 24], d[0, 24] = 3.0, 1.0
    return d


def _placed(d: np.ndarray, slots: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros((d.shape[0], width), np.float32)
    out[:, slots] = d
    return out


def test_every_group_of_a_row_keeps_one_sign():
    d = _down()
    slots = unit_slots(d, 128)
    assert len(set(slots.tolist())) == d.shape[1] and slots.max() < 128
    placed = _placed(d, slots, 128).reshape(4, -1, SLOT_GROUP)
    mixed = (placed > 0).any(axis=-1) & (placed < 0).any(axis=-1)
    assert not mixed.any()
    assert (_placed(d, np.arange(40), 128).reshape(4, -1, SLOT_GROUP) > 0).any(-1)[0, 0]  # the old order mixed


def test_the_mlp_computes_the_same_in_the_new_slots():
    rng = np.random.default_rng(0)
    d = _down()
    gate, up = rng.integers(-3, 4, (40, 8)).astype(np.float32), rng.integers(-3, 4, (40, 8)).astype(np.float32)
    x = rng.integers(-2, 3, (5, 8)).astype(np.float32)

    def mlp(g, u, dn):
        a = x @ g.T
        return ((a / (1 + np.exp(-a))) * (x @ u.T)) @ dn.T

    slots = unit_slots(d, 128)
    g2, u2 = np.zeros((128, 8), np.float32), np.zeros((128, 8), np.float32)
    g2[slots], u2[slots] = gate, up
    assert np.allclose(mlp(g2, u2, _placed(d, slots, 128)), mlp(gate, up, d), rtol=0, atol=1e-4)


def test_without_room_the_compiler_s_order_stays():
    d = _down()
    assert np.array_equal(unit_slots(d, 40), np.arange(40))  # 40 slots: no room for closed groups' padding
