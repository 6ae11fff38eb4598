"""The circuit's layer blocks as the runners hold them: a compact layer's weights over the
narrow residual, merged and packed once (:func:`mixer_weights`, :func:`mlp_weights`).

Both token steps read these: the MLX-ops step (``circuit_runner``) and the native step
(``native_step``), which packs the same arrays (a :class:`NarrowCircuit`) for its
primitive; neither reaches into the other.
"""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx
import numpy as np

from qwengpu_mlx.runtime.sparse_product import Product


@dataclass
class Mixer:
    inputs: mx.array  # narrow residual positions read
    w_in: Product  # [C + H*Dv + 2H, |inputs|]: qkv, z, b, a stacked
    conv: mx.array  # [C, 4]
    dt_bias: mx.array
    A_log: mx.array
    norm: mx.array
    out: Product  # into the residual
    H: int
    Dk: int
    Dv: int
    heads: list


@dataclass
class PairedGate:
    """A gate whose units come in clamp pairs that differ only in their ONE-dim weight.

    ``g = repeat(shared(x), 2) + x[one] * bias``: half the product, the same terms (the
    ONE term is added last instead of somewhere inside the dot product)."""

    shared: Product  # one row per pair, ONE column zeroed
    one_col: int  # the ONE dim's position among the layer's inputs
    bias: mx.array  # [U]: every unit's ONE weight

    @staticmethod
    def make(G: np.ndarray, one_col: int | None):
        if one_col is None or G.shape[0] % 2:
            return None
        rest = G.copy()
        rest[:, one_col] = 0
        if not np.array_equal(rest[0::2], rest[1::2]):
            return None
        return PairedGate(Product(rest[0::2]), one_col, mx.array(G[:, one_col].astype(np.float32)))

    def arrays(self) -> list[mx.array]:
        return [self.bias] + self.shared.arrays()

    def __call__(self, hi: mx.array) -> mx.array:
        s = self.shared(hi)
        pairs = mx.broadcast_to(s[:, :, None], (*s.shape, 2)).reshape(s.shape[0], -1)
        return pairs + hi[:, self.one_col:self.one_col + 1] * self.bias


@dataclass
class MLP:
    inputs: mx.array
    gate: Product | PairedGate
    up: Product | None  # None: up(x) = x[up_col] * up_val (one dim, one weight)
    up_col: int
    up_val: float
    down: Product  # into the residual


def mixer_weights(mz, pos: np.ndarray) -> Mixer:
    w_in = np.concatenate([mz.qkv, mz.z, mz.b, mz.a], axis=0)
    return Mixer(mx.array(pos[mz.inputs].astype(np.int32)), Product(w_in), mx.array(mz.conv),
                  mx.array(mz.dt_bias), mx.array(mz.A_log), mx.array(mz.norm),
                  Product(mz.out, targets=pos[mz.outputs]), len(mz.heads), mz.Dk, mz.Dv, list(mz.heads))


def mlp_weights(ml, pos: np.ndarray, one: int) -> MLP:
    # the circuit's up projection reads one dim (ONE) with one weight for every unit:
    # then up(x) is that dim times the weight, exactly (the other terms are 0 * x)
    nz_cols = np.nonzero(np.any(ml.up != 0, axis=0))[0]
    vals = np.unique(ml.up[:, nz_cols[0]]) if len(nz_cols) == 1 else []
    single = len(vals) == 1
    cols = np.nonzero(np.asarray(ml.inputs) == one)[0]
    gate = PairedGate.make(ml.gate, int(cols[0]) if len(cols) else None) or Product(ml.gate)
    return MLP(mx.array(pos[ml.inputs].astype(np.int32)), gate, None if single else Product(ml.up),
                int(nz_cols[0]) if single else -1, float(vals[0]) if single else 0.0,
                Product(ml.down, targets=pos[ml.outputs]))


@dataclass(frozen=True)
class NarrowCircuit:
    """What a token step reads of a compact circuit over the narrow residual: the one
    interface between the runner and the native step (``native_step.NativeStep`` packs
    exactly these; it never reads the runner)."""

    width: int  # live residual dims
    hidden: int  # the full residual width (RMSNorm's mean divides by it)
    eps: float
    K: float  # the circuit's gate scale, signal gain and clamp delta (``compiler``)
    gain: float
    delta: float
    one_pos: int  # the ONE dim's position in the narrow residual
    out_pos: mx.array  # the output dims' positions
    final_norm: mx.array
    emb_out: mx.array  # [|out|, V]: the tied output rows
    norm_w: list  # per layer: (input norm, post-mixer norm) over the live dims
    mixers: list  # per layer: a Mixer or None
    mlps: list  # per layer: an MLP or None
