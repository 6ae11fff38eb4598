"""What the compiled circuit needs from a model shape, and what a dense checkpoint costs.

Qwen3.5 checkpoints are dense and every layer has the same widths, so a circuit fits a
shape only if its widest layer does: residual dims, MLP units and linear heads per
layer. ``live_dims`` counts, per layer, the residual dims that hold a value someone
still reads (written at or before the layer, read at or after it): the width the
residual would need if dims were reused once dead. ``build`` and ``bench/`` use these
figures; ``compile --emit layout`` prints the per-layer ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape

QWEN35_2B = Shape(hidden=2048, intermediate=6144, linear_heads=16, key_dim=128, value_dim=128,
                  attn_heads=8, kv_heads=2, head_dim=256)


def dense_parameters(shape: Shape, layers: int, vocab: int) -> int:
    """Parameters of a dense Qwen3.5 checkpoint of this shape (tied embeddings)."""
    H, I = shape.hidden, shape.intermediate
    lin_conv = 2 * shape.linear_heads * shape.key_dim + shape.linear_heads * shape.value_dim
    vd = shape.linear_heads * shape.value_dim
    linear = lin_conv * H + lin_conv * 4 + vd * H + 2 * shape.linear_heads * H + 2 * shape.linear_heads \
        + shape.value_dim + H * vd
    D = shape.head_dim
    attention = 2 * shape.attn_heads * D * H + 2 * shape.kv_heads * D * H + H * shape.attn_heads * D + 2 * D
    total = vocab * H + H
    for i in range(layers):
        total += 3 * H * I + 2 * H + (linear if shape.is_linear(i) else attention)
    return total


def nonzero_parameters(cc) -> int:
    """Non-zero parameters of a compact circuit (``compiler.compact``): what it really runs."""
    nz = int((cc.embedding != 0).sum())
    for layer in cc.layers:
        for part in (layer.mlp, layer.mixer):
            if part is None:
                continue
            for name in ("gate", "up", "down", "qkv", "conv", "z", "b", "out"):
                arr = getattr(part, name, None)
                if arr is not None:
                    nz += int((arr != 0).sum())
    return nz


def live_dims(plan: CircuitPlan, *, computed_only: bool = False) -> list[int]:
    """Per layer: residual dims written at or before it that a later part (or the output) reads.

    ``computed_only`` leaves out the embedding's dims. Those cannot be handed to another
    value once dead: clearing a dim means writing minus its value, and a token bit has
    level 1 while anything a layer writes scales with the signal ratio r (docs/CIRCUIT.md,
    "Levels"), so only at r = 1 would it cancel.
    """
    plan.finalize()
    H, L = plan.shape.hidden, len(plan.layers)
    first = np.full(H, L + 1)
    last = np.full(H, -1)
    first[plan.embedding_dims()] = -1
    for i, lp in enumerate(plan.layers):
        parts = []
        if lp.mixer is not None and lp.mixer.heads:
            parts.append((lp.mixer.input_dims(), lp.mixer.output_dims()))
        if lp.mlp is not None and lp.mlp.gates:
            parts.append((lp.mlp.used_inputs(), lp.mlp.used_outputs()))
        for ins, outs in parts:
            last[ins] = np.maximum(last[ins], i)
            first[outs] = np.minimum(first[outs], i)
    if plan.final_norm_dims is not None:
        last[np.asarray(plan.final_norm_dims, dtype=np.int64)] = L
    live = (first <= np.arange(L)[:, None]) & (last >= np.arange(L)[:, None])
    if computed_only:
        live[:, plan.embedding_dims()] = False
    return [int(n) for n in live.sum(axis=1)]


@dataclass
class Needs:
    layers: int
    dims_used: int
    live_max: int
    live_layer: int
    embedding_dims: int
    reuse_bound: int  # embedding dims + the most computed dims live at once: the least reuse reaches
    units_max: int
    units_layer: int
    heads_max: int
    heads_layer: int
    key_rows_max: int
    value_channels_max: int
    vocab: int


def needs(plan: CircuitPlan) -> Needs:
    plan.finalize()
    live = live_dims(plan)
    emb = len(plan.embedding_dims())
    bound = emb + max(live_dims(plan, computed_only=True))
    units = [lp.mlp.units if lp.mlp else 0 for lp in plan.layers]
    heads = [len(lp.mixer.heads) if lp.mixer else 0 for lp in plan.layers]
    all_heads = [h for lp in plan.layers if lp.mixer for h in lp.mixer.heads]
    return Needs(len(plan.layers), plan.layout.used, max(live), int(np.argmax(live)), emb, bound, max(units),
                 int(np.argmax(units)), max(heads), int(np.argmax(heads)),
                 max(h.rows for h in all_heads), max(2 * h.bits for h in all_heads), len(plan.vocab))


@dataclass(frozen=True)
class Misfit:
    """One width of a shape that a circuit needs more of: what, how much, and in words."""

    resource: str  # one of RESOURCES
    need: int
    has: int
    message: str

    def __str__(self) -> str:
        return self.message


RESOURCES = ("residual", "mlp", "heads", "key_dim", "value_dim")


class DoesNotFit(ValueError):
    """The machine's circuit needs more than the shape has: ``misfits`` says what, the message in words."""

    def __init__(self, misfits: list[Misfit] | tuple[Misfit, ...]):
        self.misfits = tuple(misfits)
        super().__init__("; ".join(m.message for m in self.misfits))

    @property
    def resources(self) -> tuple[str, ...]:
        return tuple(m.resource for m in self.misfits)


def shape_misfits(n: Needs, shape: Shape) -> list[Misfit]:
    """Why a circuit with needs ``n`` does not fit ``shape`` (empty: it fits), one Misfit per width."""
    out = []
    if n.dims_used > shape.hidden:
        out.append(Misfit("residual", n.dims_used, shape.hidden,
                          f"residual: {n.dims_used} dims allocated; with every dead dim reused, as scheduled, it "
                          f"would still need "
                          f"{n.reuse_bound} ({n.embedding_dims} embedding dims, which cannot be reused, plus the "
                          f"{n.reuse_bound - n.embedding_dims} computed ones live at once at the widest layer), "
                          f"the shape has {shape.hidden}"))
    if n.units_max > shape.intermediate:
        out.append(Misfit("mlp", n.units_max, shape.intermediate,
                          f"MLP: layer {n.units_layer} needs {n.units_max} units, the shape has {shape.intermediate}"))
    if n.heads_max > shape.linear_heads:
        out.append(Misfit("heads", n.heads_max, shape.linear_heads,
                          f"linear attention: layer {n.heads_layer} needs {n.heads_max} heads, "
                          f"the shape has {shape.linear_heads}"))
    if n.key_rows_max > shape.key_dim:
        out.append(Misfit("key_dim", n.key_rows_max, shape.key_dim,
                          f"state rows: a head needs {n.key_rows_max} rows, the shape's key dim is {shape.key_dim}"))
    if n.value_channels_max > shape.value_dim:
        out.append(Misfit("value_dim", n.value_channels_max, shape.value_dim,
                          f"state columns: a head needs {n.value_channels_max} value channels, "
                          f"the shape's value dim is {shape.value_dim}"))
    return out


def misfits(n: Needs, shape: Shape) -> list[str]:
    """Why a circuit with needs ``n`` does not fit ``shape`` (empty: it fits), in words."""
    return [m.message for m in shape_misfits(n, shape)]
