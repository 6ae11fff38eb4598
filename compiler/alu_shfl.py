"""Warp shuffle (``shfl.sync`` idx/up/down/bfly on 2-bit lane fields): one instance per slot.

Semantics (docs/MACHINE.md): with ``c = clamp | segmask << 8``,
``maxLane = (lane & segmask) | (clamp & ~segmask)``, ``minLane = lane & segmask``;
up ``j = lane - b`` (in range iff ``j >= maxLane``), down ``j = lane + b`` (``j <=
maxLane``), bfly ``j = lane ^ b`` (``j <= maxLane``), idx ``j = minLane | (b & ~segmask)``
(``j <= maxLane``); a lane reads lane j's value if j is in range and in ``member``,
else its own. The predicate output is the in-range bit alone.

For one output lane (a static index) everything but the values is a boolean function
of six bits: ``b[lane]``'s low two bits, ``clamp`` and ``segmask`` (the mode one-hot,
``member`` and ``sel`` only gate). Two MLP layers:

layer0 (MLP 1)
    ``pouts[l] = sel & inrange_l`` and ``t[l][j] = sel & inrange_l & (src_l == j) &
    member[j]`` for ``j != l``. Each 6-bit function is written as a sum of gates with
    disjoint supports, each gate a subcube (a conjunction of literals) times a threshold
    function of the remaining bits; a small search (Shannon splits, integer weights in
    -3..3) finds the covers once per process and every cover is checked exhaustively
    against the definition. The mode bit, ``sel`` (and ``member[j]``) join the subcube
    as positive literals with a weight that dominates the threshold part.
layer0 + 1 (MLP 2)
    the value mux: ``outs[l]_i += [vals[j]_i + t[l][j] >= 2]`` for ``j != l`` and
    ``outs[l]_i += [vals[l]_i - sum_j t[l][j] + sel >= 2]`` (own value).

All gates are integer thresholds (margin 0.5); nothing is written when ``sel`` is 0.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

from qwengpu_mlx.compiler.residual import Subspace

MODES = ("idx", "up", "down", "bfly")
LANES = 4
W = 32
_NV = 6  # variables: b0, b1, clamp0, clamp1, segmask0, segmask1
_PTS = np.array([[(x >> k) & 1 for k in range(_NV)] for x in range(1 << _NV)], np.int64)
_WMAX = 3  # integer weights searched for the threshold parts
_TMAX_VARS = 5  # largest support searched for a threshold part


def shfl_source(mode: str, lane: int, b: int, clamp: int, segmask: int) -> tuple[int, bool]:
    """(j, in range) of one lane, from the definition (lane fields are 2 bits)."""
    b, clamp, segmask = b & 3, clamp & 3, segmask & 3
    max_lane = (lane & segmask) | (clamp & ~segmask & 3)
    min_lane = lane & segmask
    if mode == "up":
        j = lane - b
        return j, j >= max_lane
    if mode == "down":
        j = lane + b
        return j, j <= max_lane
    if mode == "bfly":
        j = lane ^ b
        return j, j <= max_lane
    if mode == "idx":
        j = min_lane | (b & ~segmask & 3)
        return j, j <= max_lane
    raise ValueError(f"unknown shfl mode {mode!r}")


@lru_cache(maxsize=None)
def _weights(k: int) -> np.ndarray:
    rows = list(itertools.product(range(-_WMAX, _WMAX + 1), repeat=k))
    return np.array(rows, np.int64).reshape(len(rows), k)


# A term: (literals ((var, value), ...), threshold part ((var, weight), ...), theta);
# it is 1 iff all literals hold and sum weight * var >= theta.
Term = tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...], int]


@lru_cache(maxsize=None)
def _cover(tt: tuple[bool, ...], fixed: tuple[tuple[int, int], ...] = ()) -> tuple[Term, ...]:
    """Fewest disjoint terms whose sum is ``tt`` on the subcube ``fixed``."""
    fx = dict(fixed)
    pts = [x for x in range(1 << _NV) if all((x >> v) & 1 == val for v, val in fx.items())]
    if not any(tt[x] for x in pts):
        return ()
    free = [v for v in range(_NV) if v not in fx]
    sup = tuple(v for v in free if any(tt[x] != tt[x ^ (1 << v)] for x in pts))
    if len(sup) <= _TMAX_VARS:
        f = np.array([tt[x] for x in pts])
        ws = _weights(len(sup))
        s = ws @ _PTS[pts][:, list(sup)].T  # [weights, points]
        ones = np.where(f[None, :], s, 1 << 30).min(1)
        zeros = np.where(~f[None, :], s, -(1 << 30)).max(1)
        ok = np.nonzero(ones > zeros)[0]
        if len(ok):
            best = ok[np.argmin(np.abs(ws[ok]).sum(1))]
            part = tuple((v, int(w)) for v, w in zip(sup, ws[best]) if w)
            return ((fixed, part, int(ones[best]) if part else 0),)
    best = None
    for v in sup:
        c = (_cover(tt, tuple(sorted(fixed + ((v, 0),))))
             + _cover(tt, tuple(sorted(fixed + ((v, 1),)))))
        if best is None or len(c) < len(best):
            best = c
    return best


def _eval_term(term: Term, x: int) -> int:
    lits, part, theta = term
    if any((x >> v) & 1 != val for v, val in lits):
        return 0
    return int(sum(w * ((x >> v) & 1) for v, w in part) >= theta)


@lru_cache(maxsize=None)
def lane_covers(mode: str, lane: int) -> tuple[tuple[Term, ...], dict[int, tuple[Term, ...]]]:
    """(cover of in-range, {j: cover of [in range and src == j]} for j != lane), verified."""
    inr, src = [], {j: [] for j in range(LANES) if j != lane}
    for x in range(1 << _NV):
        j, ok = shfl_source(mode, lane, x & 3, (x >> 2) & 3, (x >> 4) & 3)
        inr.append(ok)
        for jj in src:
            src[jj].append(bool(ok and j == jj))
    fns = {None: tuple(inr), **{j: tuple(v) for j, v in src.items()}}
    covers = {}
    for key, tt in fns.items():
        cov = _cover(tt)
        for x in range(1 << _NV):
            if sum(_eval_term(t, x) for t in cov) != tt[x]:  # pragma: no cover - a search bug
                raise AssertionError(f"shfl cover wrong: {mode} lane {lane} j {key} point {x}")
        covers[key] = cov
    return covers.pop(None), covers


def _add_term_gate(mlp, gname: str, term: Term, var_dims: list[int], ctrl: list[int], outputs):
    """Gate ``[all ctrl bits and literals hold and threshold part >= theta]``."""
    lits, part, theta = term
    wb = max(1, sum(w for _, w in part if w > 0) - theta + 1)  # one missing literal sinks it
    terms = [(var_dims[v], w) for v, w in part]
    npos = 0
    for v, val in lits:
        terms.append((var_dims[v], wb if val else -wb))
        npos += val
    terms += [(d, wb) for d in ctrl]
    return mlp.gate(gname, terms, wb * (npos + len(ctrl)) + theta, outputs)


def build_shfl(plan, layer0: int, *, name: str, vals: list[Subspace], b: list[Subspace], mode: dict[str, int],
               clamp: Subspace, segmask: Subspace, member: Subspace, sel: int, outs: list[Subspace],
               pouts: list[int]) -> int:
    """Build one slot's shuffle across the 4 lanes; returns the first MLP layer it leaves unused.

    Uses ``plan.mlp(layer0)`` (predicates into ``pouts``, lane selections into the private
    ``{name}.t``, 12 dims) and ``plan.mlp(layer0 + 1)`` (the value mux into ``outs``).
    """
    if not (len(vals) == len(b) == len(outs) == len(pouts) == LANES):
        raise ValueError(f"{name}: vals, b, outs and pouts need one entry per lane ({LANES})")
    for s in list(vals) + list(outs):
        if len(s) != W:
            raise ValueError(f"{name}: value words must be {W} bits, {s.name} has {len(s)}")
    if len(clamp) < 2 or len(segmask) < 2 or len(member) < LANES or any(len(x) < 2 for x in b):
        raise ValueError(f"{name}: clamp, segmask and every b need 2 bits, member {LANES}")
    unknown = set(mode) - set(MODES)
    if unknown:
        raise ValueError(f"{name}: unknown shfl modes {sorted(unknown)} (known: {MODES})")
    pairs = [(l, j) for l in range(LANES) for j in range(LANES) if j != l]
    t_space = plan.layout.alloc(f"{name}.t", len(pairs))
    t = {lj: t_space[i] for i, lj in enumerate(pairs)}

    m1 = plan.mlp(layer0)
    for l in range(LANES):
        var_dims = [b[l][0], b[l][1], clamp[0], clamp[1], segmask[0], segmask[1]]
        for md in MODES:
            if md not in mode:
                continue
            inr, src = lane_covers(md, l)
            for k, term in enumerate(inr):
                _add_term_gate(m1, f"{name}.p[{l}].{md}{k}", term, var_dims, [mode[md], sel], [(pouts[l], 1.0)])
            for j, cov in src.items():
                for k, term in enumerate(cov):
                    _add_term_gate(m1, f"{name}.t[{l}<{j}].{md}{k}", term, var_dims,
                                   [mode[md], sel, member[j]], [(t[l, j], 1.0)])

    m2 = plan.mlp(layer0 + 1)
    for l in range(LANES):
        others = [j for j in range(LANES) if j != l]
        for i in range(W):
            for j in others:
                m2.gate(f"{name}.mux[{l}][{i}]<{j}", [(vals[j][i], 1), (t[l, j], 1)], 2, [(outs[l][i], 1.0)])
            m2.gate(f"{name}.mux[{l}][{i}]<own", [(vals[l][i], 1), (sel, 1)] + [(t[l, j], -1) for j in others],
                    2, [(outs[l][i], 1.0)])
    return layer0 + 2
