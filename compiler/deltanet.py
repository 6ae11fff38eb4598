"""Gated DeltaNet layers as addressable memories (docs/CIRCUIT.md, "State as memory").

Each head of a layer is a table of rows: a one-hot key writes one row (gate open,
beta = 1), a one-hot query reads one back. Values are stored dual-rail, so the gated
RMSNorm of the read path sees the same number of ones in every written row and the
read level is a compile-time constant.

Keys, values and queries come from residual dims at a conv tap: tap 3 is the current
token, taps 0..2 the three before it. A record of up to four tokens (a header naming
the row, then value chunks) is thereby written in one step at its last token.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS, Levels
from qwengpu_mlx.compiler.residual import ResidualLayout

CURRENT = 3  # conv tap of the current token


@dataclass
class HeadBuilder:
    """One head: what writes it (key rows, value bits) and what reads it (query, outputs)."""

    name: str
    index: int
    rows: int
    bits: int  # value bits per row (stored dual-rail: 2 * bits channels)
    key_terms: list = field(default_factory=list)  # (row, dim, tap, weight)
    value_terms: list = field(default_factory=list)  # (bit, dim, tap, weight)
    query_terms: list = field(default_factory=list)  # (row, dim, weight)
    read_terms: list = field(default_factory=list)  # (bit, out dim, weight)

    def key(self, row: int, dim: int, tap: int = CURRENT, weight: float = 1.0) -> None:
        """Key channel ``row`` = ``weight * x[dim]`` of the token at ``tap`` (a bit: 0 or 1)."""
        self._check_row(row)
        self.key_terms.append((row, int(dim), tap, weight))

    def value_bit(self, bit: int, dim: int, tap: int = CURRENT) -> None:
        """Stored bit ``bit`` = residual bit ``dim`` of the token at ``tap``."""
        if not 0 <= bit < self.bits:
            raise ValueError(f"head {self.name}: value bit {bit} outside {self.bits}")
        self.value_terms.append((bit, int(dim), tap, 1.0))

    def query(self, row: int, dim: int, weight: float = 1.0) -> None:
        self._check_row(row)
        self.query_terms.append((row, int(dim), weight))

    def read_bit(self, bit: int, out_dim: int, weight: float = 1.0) -> None:
        """Add the read row's bit ``bit`` (level 1) to residual dim ``out_dim``."""
        self.read_terms.append((bit, int(out_dim), weight))

    def _check_row(self, row):
        if not 0 <= row < self.rows:
            raise ValueError(f"head {self.name}: row {row} outside {self.rows}")


class DeltaNetBuilder:
    """The weights of one Gated DeltaNet layer, assembled from memory heads."""

    def __init__(self, layout: ResidualLayout, *, heads: int, key_dim: int, value_dim: int,
                 levels: Levels = DEFAULT_LEVELS, name: str = "deltanet"):
        self.layout = layout
        self.H, self.Dk, self.Dv = heads, key_dim, value_dim
        self.levels = levels
        self.name = name
        self.heads: list[HeadBuilder] = []
        self.z_ref = (layout.ONE, 1.0 / levels.K)  # output gate z from this (dim, weight); see CircuitPlan.finalize

    def head(self, name: str, rows: int, bits: int) -> HeadBuilder:
        if len(self.heads) >= self.H:
            raise ValueError(f"{self.name}: all {self.H} heads used, adding {name!r}")
        if rows > self.Dk:
            raise ValueError(f"{self.name}.{name}: {rows} rows > key dim {self.Dk}")
        if 2 * bits > self.Dv:
            raise ValueError(f"{self.name}.{name}: {bits} dual-rail bits > value dim {self.Dv}")
        h = HeadBuilder(name, len(self.heads), rows, bits)
        self.heads.append(h)
        return h

    def input_dims(self) -> np.ndarray:
        """Residual dims any projection of this layer reads."""
        lay = self.layout
        dims = {lay.ONE, self.z_ref[0]}
        for h in self.heads:
            dims |= {lay.reference(lay.scale_class.get(d, 0), self.levels.K)[0] for _, d, _, _ in h.value_terms}
            dims |= {d for _, d, _, _ in h.key_terms}
            dims |= {d for _, d, _ in h.query_terms}
            dims |= {d for _, d, _, _ in h.value_terms}
        return np.array(sorted(dims), dtype=np.int64)

    def output_dims(self) -> np.ndarray:
        return np.array(sorted({d for h in self.heads for _, d, _ in h.read_terms}), dtype=np.int64)

    def weights(self, hidden: int, *, compact: bool = False) -> dict[str, np.ndarray]:
        """Parameters of ``linear_attn`` (mlx-lm names, MLX layout).

        ``compact=True`` keeps only this layer's heads (in order) and only the residual
        dims it reads (columns) and writes (rows of ``out_proj``): see ``input_dims`` /
        ``output_dims``. The values are the same numbers.
        """
        L = self.levels
        Dk, Dv, K = self.Dk, self.Dv, L.K
        H = len(self.heads) if compact else self.H
        slot = {h.index: (i if compact else h.index) for i, h in enumerate(self.heads)}
        if compact:
            ins, outs = self.input_dims(), self.output_dims()
            col = {int(d): i for i, d in enumerate(ins)}
            row = {int(d): i for i, d in enumerate(outs)}
            ncol, nrow = len(ins), len(outs)
        else:
            col = row = None
            ncol = nrow = hidden
        C = (lambda d: col[d]) if compact else (lambda d: d)
        R = (lambda d: row[d]) if compact else (lambda d: d)
        lay = self.layout
        one = C(lay.ONE)
        kd, vd = H * Dk, H * Dv
        conv_dim = 2 * kd + vd
        qkv = np.zeros((conv_dim, ncol), np.float32)
        conv = np.zeros((conv_dim, 4, 1), np.float32)
        z = np.zeros((vd, ncol), np.float32)
        b = np.zeros((H, ncol), np.float32)
        out = np.zeros((nrow, vd), np.float32)
        taps: dict[int, int] = {}

        def set_tap(ch, tap):
            if taps.setdefault(ch, tap) != tap:
                raise ValueError(f"{self.name}: channel {ch} fed from two conv taps")
            conv[ch, tap, 0] = 1.0

        for h in self.heads:
            hi = slot[h.index]
            q0, k0, v0 = hi * Dk, kd + hi * Dk, 2 * kd + hi * Dv
            for r, dim, tap, w in h.key_terms:
                qkv[k0 + r, C(dim)] += L.key_level * w
                set_tap(k0 + r, tap)
            for r, dim, w in h.query_terms:
                qkv[q0 + r, C(dim)] += L.key_level * w
                set_tap(q0 + r, CURRENT)
            for bit, dim, tap, w in h.value_terms:
                qkv[v0 + 2 * bit, C(dim)] += L.value_level * w  # b rail
                qkv[v0 + 2 * bit + 1, C(dim)] -= L.value_level * w  # 1-b rail = level (1 - b)
                # the 1 of the 1-b rail: the constant of the bit's own scale class
                ref, ref_w = lay.reference(lay.scale_class.get(dim, 0), K)
                qkv[v0 + 2 * bit + 1, C(ref)] += L.value_level * ref_w
                set_tap(v0 + 2 * bit, tap)
                set_tap(v0 + 2 * bit + 1, tap)
            if h.key_terms or h.query_terms:
                b[hi, one] = L.beta_logit / K
            if h.read_terms:
                z[hi * Dv:(hi + 1) * Dv, C(self.z_ref[0])] = L.z_level * self.z_ref[1]
                # a stored one reads back as sqrt(Dv / bits) after the gated RMSNorm
                scale = 1.0 / ((Dv / h.bits) ** 0.5 * L.z_level)
                for bit, dim, w in h.read_terms:
                    out[R(dim), hi * Dv + 2 * bit] += w * scale
        return {
            "in_proj_qkv.weight": qkv,
            "conv1d.weight": conv,
            "in_proj_z.weight": z,
            "in_proj_b.weight": b,
            "in_proj_a.weight": np.zeros((H, ncol), np.float32),
            "dt_bias": np.full((H,), L.dt_bias, np.float32),
            "A_log": np.zeros((H,), np.float32),
            "norm.weight": np.ones((Dv,), np.float32),
            "out_proj.weight": out,
        }

    def used_heads(self) -> list[int]:
        return [h.index for h in self.heads]
