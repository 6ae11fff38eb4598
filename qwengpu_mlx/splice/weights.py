"""The combined checkpoint's tensors: the base's and the circuit's, each in its own dims.

Stages that take tensors and return tensors (``layout.py`` says why the dims are
disjoint and why every factor is a power of two):

* :func:`base_layer` widens one base layer: input projections get zero columns for
  the circuit's dims, output projections double and get zero rows, norms halve;
* :func:`circuit_layer` moves one circuit layer to its dims and index, maps its heads
  onto the base's head geometry and pads its MLP to the base's width;
* :func:`embedding_and_norm` stacks the doubled base rows and the launch rows, and
  writes the final norm (the base's quartered, the circuit's output dims at their level).

All names are mlx-lm's (``language_model.model...``, MLX layout).
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

import mlx.core as mx
import numpy as np

from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS

from .layout import RESIDUAL_SCALE, SpliceLayout

PREFIX = "language_model.model."
_LAYER = re.compile(r"^language_model\.model\.layers\.(\d+)\.(.+)$")
IN_SIDE = ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "q_proj", "k_proj", "v_proj",
            "gate_proj", "up_proj")
OUT_SIDE = ("out_proj", "o_proj", "down_proj")


class QuantizedBaseError(ValueError):
    """The base stores quantized tensors where the splice must change their layout."""


def _pad_columns(w: mx.array, width: int, offset: int) -> mx.array:
    """[out, n] -> [out, width], the n columns at ``offset``, zeros elsewhere."""
    n = w.shape[-1]
    parts = [mx.zeros((w.shape[0], offset), w.dtype), w, mx.zeros((w.shape[0], width - offset - n), w.dtype)]
    return mx.concatenate([p for p in parts if p.shape[-1]], axis=-1)


def _pad_rows(w: mx.array, height: int, offset: int) -> mx.array:
    """[n, ...] -> [height, ...], the n rows at ``offset``, zeros elsewhere."""
    n = w.shape[0]
    parts = [mx.zeros((offset, *w.shape[1:]), w.dtype), w, mx.zeros((height - offset - n, *w.shape[1:]), w.dtype)]
    return mx.concatenate([p for p in parts if p.shape[0]], axis=0)


def module_of(name: str) -> str:
    """``linear_attn.in_proj_qkv.weight`` -> ``in_proj_qkv``."""
    parts = name.split(".")
    return parts[-2] if len(parts) >= 2 else ""


def tensor_role(name: str) -> str:
    """How a base layer tensor changes in the combined width: ``norm`` (hidden-wide, halved),
    ``in`` (reads the residual: zero columns), ``out`` (writes it: doubled, zero rows), or
    ``own`` (no hidden dim: unchanged)."""
    if name.endswith("layernorm.weight"):
        return "norm"
    mod = module_of(name)
    return "in" if mod in IN_SIDE else "out" if mod in OUT_SIDE else "own"


def base_layer(params: dict[str, mx.array], lay: SpliceLayout) -> dict[str, mx.array]:
    """One base layer's tensors (names after ``layers.{i}.``) in the combined width."""
    if any(k.endswith(".scales") for k in params):
        raise QuantizedBaseError("quantized base layers are not spliced yet (a bf16 or float32 base is)")
    out = {}
    for name, w in params.items():
        role = tensor_role(name)
        if role == "norm":
            out[name] = _pad_rows(w / RESIDUAL_SCALE, lay.hidden, 0)
        elif role == "in":
            out[name] = _pad_columns(w, lay.hidden, 0)
        elif role == "out":
            out[name] = _pad_rows(w * RESIDUAL_SCALE, lay.hidden, 0)
        else:  # conv1d, A_log, dt_bias, the heads' own norms: no hidden dim
            out[name] = w
    return out


def _circuit_norm(lay: SpliceLayout, dtype) -> mx.array:
    """A circuit layer's input norm: ``K / sqrt(4 H)`` on the circuit's dims, 0 elsewhere."""
    w = np.zeros((lay.hidden,), np.float32)
    w[lay.circuit_offset: lay.circuit_offset + lay.circuit_hidden] = DEFAULT_LEVELS.norm_weight(lay.hidden)
    return mx.array(w).astype(dtype)


def _value_channels(lay: SpliceLayout, heads: int, dv: int) -> np.ndarray:
    """Base value channels (head-major) the circuit's value channels go to, in order."""
    return np.concatenate([lay.value_head(h) * dv + np.arange(dv) for h in range(heads)])


def _circuit_mixer(params: dict[str, mx.array], lay: SpliceLayout) -> dict[str, mx.array]:
    """The circuit's Gated DeltaNet tensors on the base's head geometry."""
    b, c = lay.base, lay.circuit
    Hc, Dk, Dv = c["linear_num_value_heads"], c["linear_key_head_dim"], c["linear_value_head_dim"]
    Hk, Hv = b["linear_num_key_heads"], b["linear_num_value_heads"]
    vch = _value_channels(lay, Hc, Dv)
    heads = np.array([lay.value_head(h) for h in range(Hc)])

    def place(rows: mx.array, n_out: int, index: np.ndarray) -> mx.array:
        full = np.zeros((n_out, *rows.shape[1:]), np.float32)
        full[index] = np.array(rows.astype(mx.float32))
        return mx.array(full)

    qk_index = np.concatenate([np.arange(Hc * Dk), Hk * Dk + np.arange(Hc * Dk)])
    qkv_out = 2 * Hk * Dk + Hv * Dv
    qkv_index = np.concatenate([qk_index, 2 * Hk * Dk + vch])
    p = "linear_attn."
    out = {}
    qkv = params[p + "in_proj_qkv.weight"]
    out[p + "in_proj_qkv.weight"] = _pad_columns(place(qkv, qkv_out, qkv_index), lay.hidden, lay.circuit_offset)
    out[p + "conv1d.weight"] = place(params[p + "conv1d.weight"], qkv_out, qkv_index)
    out[p + "in_proj_z.weight"] = _pad_columns(place(params[p + "in_proj_z.weight"], Hv * Dv, vch), lay.hidden,
                                               lay.circuit_offset)
    for k in ("in_proj_b.weight", "in_proj_a.weight"):
        out[p + k] = _pad_columns(place(params[p + k], Hv, heads), lay.hidden, lay.circuit_offset)
    for k in ("A_log", "dt_bias"):
        out[p + k] = place(params[p + k], Hv, heads)
    out[p + "norm.weight"] = params[p + "norm.weight"]
    o = params[p + "out_proj.weight"]  # [C, Hc * Dv]
    cols = np.zeros((o.shape[0], Hv * Dv), np.float32)
    cols[:, vch] = np.array(o.astype(mx.float32))
    out[p + "out_proj.weight"] = _pad_rows(mx.array(cols), lay.hidden, lay.circuit_offset)
    return out


def _inert_attention(lay: SpliceLayout) -> dict[str, mx.array]:
    """A circuit layer at a full-attention index: all-zero attention in the base's shapes."""
    b = lay.base
    D, Hq, KV = b["head_dim"], b["num_attention_heads"], b["num_key_value_heads"]
    p, H = "self_attn.", lay.hidden
    return {p + "q_proj.weight": mx.zeros((2 * Hq * D, H)), p + "k_proj.weight": mx.zeros((KV * D, H)),
            p + "v_proj.weight": mx.zeros((KV * D, H)), p + "o_proj.weight": mx.zeros((H, Hq * D)),
            p + "q_norm.weight": mx.ones((D,)), p + "k_norm.weight": mx.ones((D,))}


def circuit_layer(params: dict[str, mx.array], index: int, lay: SpliceLayout) -> dict[str, mx.array]:
    """Circuit layer ``index``'s tensors (names after ``layers.{i}.``) in the combined model."""
    out = {"input_layernorm.weight": _circuit_norm(lay, mx.float32),
           "post_attention_layernorm.weight": _circuit_norm(lay, mx.float32)}
    if "linear_attn.in_proj_qkv.weight" in params:
        out.update(_circuit_mixer(params, lay))
    else:
        out.update(_inert_attention(lay))
    inter = lay.base["intermediate_size"]
    for k in ("gate_proj", "up_proj"):
        w = _pad_rows(params[f"mlp.{k}.weight"], inter, 0)
        out[f"mlp.{k}.weight"] = _pad_columns(w, lay.hidden, lay.circuit_offset)
    d = params["mlp.down_proj.weight"]  # [C, I_c]
    d = mx.concatenate([d, mx.zeros((d.shape[0], inter - d.shape[1]), d.dtype)], axis=1) if inter > d.shape[1] else d
    out["mlp.down_proj.weight"] = _pad_rows(d, lay.hidden, lay.circuit_offset)
    return {k: v.astype(mx.float32) for k, v in out.items()}


def embedding_and_norm(base_embedding: mx.array, base_final_norm: mx.array, circuit_embedding: mx.array,
                       circuit_final_norm: mx.array, launch_base_row: mx.array, lay: SpliceLayout) -> dict:
    """The tied embedding [base rows + launch rows, 4 H] and the final norm [4 H].

    Base rows: doubled, in the base's dims. Launch rows: the circuit's row in its dims
    plus ``launch_base_row`` (shared by all, ``logits.py``) in the base's dims. Final
    norm: the base's quartered (its residual and its tied rows are both doubled), the
    circuit's output dims at ``K / sqrt(4 H)``, so the circuit's logits are its own."""
    dtype = base_embedding.dtype
    base_rows = _pad_columns(base_embedding * RESIDUAL_SCALE, lay.hidden, 0)
    launch = _pad_columns(circuit_embedding.astype(mx.float32), lay.hidden, lay.circuit_offset)
    shared = _pad_columns((launch_base_row * RESIDUAL_SCALE).astype(mx.float32)[None, :], lay.hidden, 0)
    rows = mx.concatenate([base_rows, (launch + shared).astype(dtype)], axis=0)
    fn_base = _pad_rows(base_final_norm / (RESIDUAL_SCALE * RESIDUAL_SCALE), lay.hidden, 0)
    circ = np.array(circuit_final_norm.astype(mx.float32)) != 0
    fn = np.zeros((lay.hidden,), np.float32)
    fn[lay.circuit_offset + np.nonzero(circ)[0]] = DEFAULT_LEVELS.norm_weight(lay.hidden)
    final = fn_base + mx.array(fn).astype(fn_base.dtype)
    return {PREFIX + "embed_tokens.weight": rows, PREFIX + "norm.weight": final}


def layer_index(name: str) -> int | None:
    """The layer a tensor name belongs to, None for the embedding and final norm."""
    m = _LAYER.match(name)
    return int(m.group(1)) if m else None


def split_layers(weights: dict[str, mx.array]) -> tuple[dict, dict[int, dict]]:
    """(non-layer tensors, layer index -> {name after ``layers.{i}.``: tensor})."""
    top, layers = {}, {}
    for k, v in weights.items():
        m = _LAYER.match(k)
        if m:
            layers.setdefault(int(m.group(1)), {})[m.group(2)] = v
        else:
            top[k] = v
    return top, layers


def combined_shards(base: dict[str, mx.array], circuit_parts: Iterable[dict[str, mx.array]],
                    launch_base_row: mx.array, lay: SpliceLayout) -> Iterator[dict[str, mx.array]]:
    """The combined model's tensors, one shard at a time: embedding and final norm, then
    each base layer, then each circuit layer (one layer dense in memory at a time)."""
    top, base_layers = split_layers(base)
    circuit_parts = iter(circuit_parts)
    ctop = next(circuit_parts)
    yield embedding_and_norm(top[PREFIX + "embed_tokens.weight"], top[PREFIX + "norm.weight"],
                             ctop[PREFIX + "embed_tokens.weight"], ctop[PREFIX + "norm.weight"],
                             launch_base_row, lay)
    for i in range(lay.base_layers):
        yield {f"{PREFIX}layers.{i}.{k}": v for k, v in base_layer(base_layers[i], lay).items()}
    for j, part in enumerate(circuit_parts):
        _, cl = split_layers(part)
        (params,) = cl.values()
        i = lay.base_layers + j
        yield {f"{PREFIX}layers.{i}.{k}": v for k, v in circuit_layer(params, j, lay).items()}
