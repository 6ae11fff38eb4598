"""SwiGLU MLP layers as threshold logic: the clamp pair and its bookkeeping.

An :class:`MLPBuilder` collects gates for one layer's MLP. Each gate is
``T = [sum_i w_i x_i >= theta]`` over residual dims holding bits (level 1) or small
integers, realised by two hidden units (docs/CIRCUIT.md, "the clamp pair"), and adds
``T * out_weight`` to output dims. The builder records every gate so a check pass can
measure its margin on real activations; ``weights()`` returns dense gate/up/down
matrices in mlx-lm's layout, ``used_units``/``used_inputs``/``used_outputs`` what a
sparse execution path needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS, Levels
from qwengpu_mlx.compiler.residual import ResidualLayout


def eq_terms(dims, value: int) -> tuple[list, int]:
    """Terms and threshold of ``[bits(dims) == value]``: +1 where value has a 1, -1 where 0.

    The sum equals popcount(value) exactly when the field equals value, else it is at
    least 1 lower.
    """
    terms = [(d, 1 if (value >> i) & 1 else -1) for i, d in enumerate(dims)]
    return terms, bin(value).count("1")


@dataclass(frozen=True)
class Gate:
    name: str
    terms: tuple[tuple[int, float], ...]  # (residual dim, integer weight)
    theta: float  # fires when sum >= theta; inputs are integers so the cut is at theta - 1/2
    outputs: tuple[tuple[int, float], ...]  # (residual dim, weight of T)
    unit: int  # index of its first hidden unit (the second is unit + 1)


def threshold_reference(layout: ResidualLayout, g: Gate, K: float) -> tuple[tuple, float, tuple[int, float]]:
    """(terms without ONE, threshold, reference (dim, weight)) of a gate.

    Terms on ONE are constants (``w * K`` bits) and move into the threshold. The
    threshold is then written against the constant of the scale class that carries most
    of the gate's input weight (``ResidualLayout.scale_class``): an MLP output is
    homogeneous of degree 2 in its normalised input, so when a host model's activations
    shrink the signal ratio r, bits and reference shrink alike and the decision does not
    move. Only the minority inputs of a mixed gate still see r.
    """
    const = sum(w * K for d, w in g.terms if d == layout.ONE)
    terms = tuple((d, w) for d, w in g.terms if d != layout.ONE)
    weight = {}
    for d, w in terms:
        c = layout.scale_class.get(d, 0)
        weight[c] = weight.get(c, 0.0) + abs(w)
    cls = max(weight, key=weight.get) if weight else 0
    return terms, g.theta - const, layout.reference(cls, K)


class MLPBuilder:
    def __init__(self, layout: ResidualLayout, intermediate: int, levels: Levels = DEFAULT_LEVELS,
                 name: str = "mlp"):
        self.layout = layout
        self.intermediate = intermediate
        self.levels = levels
        self.name = name
        self.gates: list[Gate] = []

    @property
    def units(self) -> int:
        return 2 * len(self.gates)

    def gate(self, name: str, terms, theta: float, outputs) -> Gate:
        """Add ``T = [sum w x >= theta]``; ``outputs`` are (dim, weight) pairs receiving ``T*weight``."""
        terms = tuple((int(d), float(w)) for d, w in terms if w != 0)
        outputs = tuple((int(d), float(w)) for d, w in outputs if w != 0)
        if self.units + 2 > self.intermediate:
            raise ValueError(f"{self.name}: MLP full ({self.intermediate} units) adding gate {name!r}")
        g = Gate(name, terms, float(theta), outputs, self.units)
        self.gates.append(g)
        return g

    # Common gates. Inputs are bits unless stated.
    def and_(self, name, dims, outputs):
        return self.gate(name, [(d, 1) for d in dims], len(dims), outputs)

    def or_(self, name, dims, outputs):
        return self.gate(name, [(d, 1) for d in dims], 1, outputs)

    def not_(self, name, dim, outputs):
        # [1 - x >= 1] == [-x >= 0]
        return self.gate(name, [(dim, -1)], 0, outputs)

    def copy(self, name, dim, outputs):
        return self.gate(name, [(dim, 1)], 1, outputs)

    def weights(self, hidden: int, *, compact: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(gate_proj [I, H], up_proj [I, H], down_proj [H, I]) for mlx-lm's MLP.

        ``compact=True``: only the used units (rows), input dims (columns of gate/up:
        ``used_inputs``) and output dims (rows of down: ``used_outputs``); same values.
        """
        L = self.levels
        A, D, K = L.gain, L.delta, L.K
        if compact:
            col = {int(d): i for i, d in enumerate(self.used_inputs())}
            row = {int(d): i for i, d in enumerate(self.used_outputs())}
            I, ncol, nrow = self.units, len(col), len(row)
        else:
            col = row = None
            I, ncol, nrow = self.intermediate, hidden, hidden
        C = (lambda d: col[d]) if compact else (lambda d: d)
        R = (lambda d: row[d]) if compact else (lambda d: d)
        one = C(self.layout.ONE)
        Wg = np.zeros((I, ncol), np.float32)
        Wu = np.zeros((I, ncol), np.float32)
        Wd = np.zeros((nrow, I), np.float32)
        for g in self.gates:
            u1, u2 = g.unit, g.unit + 1
            terms, theta, (ref, scale) = threshold_reference(self.layout, g, K)
            for d, w in terms:
                Wg[u1, C(d)] += A * w
                Wg[u2, C(d)] += A * w
            # g1 = A (s - (theta - 1/2) ref) + D/2 ; g2 = g1 - D ; offsets relative to ONE/K
            Wg[u1, C(ref)] += -A * (theta - 0.5) * scale
            Wg[u2, C(ref)] += -A * (theta - 0.5) * scale
            Wg[u1, one] += D / 2 / K
            Wg[u2, one] += -D / 2 / K
            Wu[u1, one] = 1.0 / K
            Wu[u2, one] = 1.0 / K
            for d, w in g.outputs:
                Wd[R(d), u1] += w / D
                Wd[R(d), u2] -= w / D
        return Wg, Wu, Wd

    def used_units(self) -> np.ndarray:
        return np.arange(self.units)

    def used_inputs(self) -> np.ndarray:
        dims = {self.layout.ONE} | {d for g in self.gates for d, _ in g.terms}
        dims |= {threshold_reference(self.layout, g, self.levels.K)[2][0] for g in self.gates}
        return np.array(sorted(dims), dtype=np.int64)

    def used_outputs(self) -> np.ndarray:
        return np.array(sorted({d for g in self.gates for d, _ in g.outputs}), dtype=np.int64)


def gate_margins(builder: MLPBuilder, normed_input: np.ndarray) -> dict:
    """Margins of every gate on real (normalised) MLP inputs ``[T, H]``.

    Returns the smallest distance of ``sum w x`` from the cut ``theta - 1/2`` in bits
    (0.5 is perfect) and the gate where it occurs.
    """
    x = np.asarray(normed_input, np.float64)
    K = builder.levels.K
    one = x[:, builder.layout.ONE] / K  # the signal ratio r per token
    worst_bits, worst_gate = np.inf, None
    for g in builder.gates:
        terms, theta, (ref, scale) = threshold_reference(builder.layout, g, K)
        s = sum(w * x[:, d] for d, w in terms) if terms else np.zeros(len(x))
        dist = np.abs((s - (theta - 0.5) * scale * x[:, ref]) / np.where(one == 0, 1, one))
        active = one > 0
        if active.any():
            m = dist[active].min()
            if m < worst_bits:
                worst_bits, worst_gate = m, g.name
    return {"min_margin_bits": float(worst_bits), "gate": worst_gate}
