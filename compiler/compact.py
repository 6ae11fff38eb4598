"""A plan's weights restricted to what each layer uses: the fast execution path's input.

The compiled layers are mostly zeros. For every layer this keeps only the residual
dims a projection reads, the heads and MLP units that exist and the dims they write,
as small dense matrices. ``qwengpu_mlx.runtime.circuit_runner`` runs them with the same operations as
the dense model (full-width RMSNorm, the same recurrence), so a launch is token for
token the same; tests compare the two on small shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qwengpu_mlx.compiler.assemble import CircuitPlan


@dataclass
class CompactMLP:
    inputs: np.ndarray  # residual dims read
    gate: np.ndarray  # [U, |inputs|]
    up: np.ndarray  # [U, |inputs|]
    outputs: np.ndarray  # residual dims written
    down: np.ndarray  # [|outputs|, U]


@dataclass
class CompactMixer:
    heads: list[int]  # head indices in the dense layer
    inputs: np.ndarray
    qkv: np.ndarray  # [Hu*(2Dk+Dv), |inputs|]: q of used heads, then k, then v
    conv: np.ndarray  # [Hu*(2Dk+Dv), 4]
    z: np.ndarray  # [Hu*Dv, |inputs|]
    b: np.ndarray  # [Hu, |inputs|]
    a: np.ndarray  # [Hu, |inputs|]
    dt_bias: np.ndarray  # [Hu]
    A_log: np.ndarray  # [Hu]
    norm: np.ndarray  # [Dv]
    outputs: np.ndarray
    out: np.ndarray  # [|outputs|, Hu*Dv]
    Dk: int
    Dv: int


@dataclass
class CompactLayer:
    norm_in: np.ndarray
    norm_post: np.ndarray
    mixer: CompactMixer | None
    mlp: CompactMLP | None


@dataclass
class CompactCircuit:
    hidden: int
    eps: float
    embedding_dims: np.ndarray  # residual dims token embeddings use
    embedding: np.ndarray  # [V, len(embedding_dims)]
    final_norm: np.ndarray  # [H]
    out_dims: np.ndarray  # dims the final norm passes
    layers: list[CompactLayer]
    one: int = 0  # the ONE dim
    K: float = 1.0  # its level
    gain: float = 1.0  # clamp-pair gain A and width delta (for margin measurement)
    delta: float = 1.0
    memory_heads: tuple | None = None  # (layer, head) of each head the host reads memory words from, in order


def compact_mlp(builder, hidden: int) -> CompactMLP | None:
    if builder is None or not builder.gates:
        return None
    Wg, Wu, Wd = builder.weights(hidden, compact=True)
    return CompactMLP(builder.used_inputs(), Wg, Wu, builder.used_outputs(), Wd)


def compact_mixer(builder, hidden: int) -> CompactMixer | None:
    if builder is None or not builder.heads:
        return None
    w = builder.weights(hidden, compact=True)
    return CompactMixer(builder.used_heads(), builder.input_dims(), w["in_proj_qkv.weight"],
                        w["conv1d.weight"][:, :, 0], w["in_proj_z.weight"], w["in_proj_b.weight"],
                        w["in_proj_a.weight"], w["dt_bias"], w["A_log"], w["norm.weight"],
                        builder.output_dims(), w["out_proj.weight"], builder.Dk, builder.Dv)


def compact(plan: CircuitPlan) -> CompactCircuit:
    plan.finalize()
    s, L = plan.shape, plan.levels
    H = s.hidden
    nw = np.full((H,), L.norm_weight(H), np.float32)
    fnw = nw
    if plan.final_norm_dims is not None:
        fnw = np.zeros((H,), np.float32)
        fnw[np.asarray(plan.final_norm_dims, dtype=np.int64)] = L.norm_weight(H)
    layers = []
    for i, lp in enumerate(plan.layers):
        mixer = compact_mixer(lp.mixer, H) if s.is_linear(i) else None
        layers.append(CompactLayer(nw, nw, mixer, compact_mlp(lp.mlp, H)))
    out_dims = np.nonzero(fnw)[0]
    edims = plan.embedding_dims()
    E = plan.embedding_sparse[1] if plan.embedding_sparse is not None else plan.embedding[:, edims]
    return CompactCircuit(H, 1e-6, edims, E.astype(np.float32), fnw, out_dims, layers,
                          plan.layout.ONE, L.K, L.gain, L.delta)
