"""Where each circuit MLP unit goes among the base's MLP units: packed for ``down_proj``.

Why: an output projection must keep every storage group bias-free (``storage.py``: the
dims it writes are read by keys, which need exact zeros), so each group of a
``down_proj`` row must hold weights of one sign on a grid of few codes. In the
compiler's order a row's writers sit next to their clears (``+w`` and ``-w``), so
almost every group mixes signs and the matrix falls to ``mxfp4`` or ``mxfp8``. The
order of MLP units is free (a unit is its gate row, its up row and its down column,
and the MLP sums over units), and the base's MLP is wider than most circuit layers
use. So units are packed greedily into groups of ``SLOT_GROUP`` slots: a unit joins
the open group if, for every dim it writes, the group's weights on that dim keep one
sign and stay in ``{m, 2m, 3m}`` (two bits); else the group is closed and a new one
opens. Units that write nothing (a zero ``down_proj`` column) fill the closed groups'
empty slots. If the packed order needs more slots than the base has, a four-bit grid
is tried, then the compiler's order is kept."""

from __future__ import annotations

import numpy as np

SLOT_GROUP = 32  # mlx's smallest group: the least padding per closed group
GRIDS = (3, 15)  # codes above the group's step: two bits, then four


def _fits(mags: set[float], grid: int) -> bool:
    """Magnitudes all multiples of the least, at most ``grid`` times it."""
    m = min(mags)
    return all(v / m == round(v / m) and v / m <= grid for v in mags)


def _pack(writes: list[list[tuple[int, float]]], order: list[int], grid: int) -> list[list[int]]:
    """Units (by index into ``writes``) in groups of at most ``SLOT_GROUP``, greedily."""
    groups: list[list[int]] = [[]]
    held: dict[int, tuple[bool, set[float]]] = {}
    for u in order:
        ok = len(groups[-1]) < SLOT_GROUP
        for row, v in writes[u] if ok else ():
            sign, mags = held.get(row, (v > 0, set()))
            if sign != (v > 0) or not _fits(mags | {abs(v)}, grid):
                ok = False
                break
        if not ok:
            groups.append([])
            held = {}
        groups[-1].append(u)
        for row, v in writes[u]:
            held.setdefault(row, (v > 0, set()))[1].add(abs(v))
    return [g for g in groups if g]


def unit_slots(down: np.ndarray, width: int) -> np.ndarray:
    """Slot (among ``width``) of each of the circuit's units, ``down`` its [dims, units]
    output weights: written units packed (see the module's docstring), the others after."""
    units = down.shape[1]
    rows, cols = np.nonzero(down)
    writes: list[list[tuple[int, float]]] = [[] for _ in range(units)]
    for r, c in zip(rows.tolist(), cols.tolist()):
        writes[c].append((r, float(down[r, c])))
    used = [u for u in range(units) if writes[u]]
    idle = [u for u in range(units) if not writes[u]]
    order = sorted(used, key=lambda u: (writes[u][0][0], writes[u][0][1] < 0, abs(writes[u][0][1]), u))
    for grid in GRIDS:
        groups = _pack(writes, order, grid)
        if len(groups) * SLOT_GROUP <= width:
            slots = np.empty(units, np.int64)
            for k, g in enumerate(groups):
                slots[g] = k * SLOT_GROUP + np.arange(len(g))
            free = np.setdiff1d(np.arange(width), slots[used] if used else [])
            slots[idle] = free[: len(idle)]  # an idle unit writes nothing: any free slot, padding included
            return slots
    return np.arange(units)
