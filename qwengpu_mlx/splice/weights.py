"""The combined checkpoint's tensors: the base's and the circuit's, each in its own dims.

Stages that take tensors and return tensors (``layout.py`` says why the dims are
disjoint and why every factor is a power of two):

* :func:`base_layer` widens one base layer: input projections get zero columns for
  the circuit's dims, output projections double and get zero rows, norms halve;
* :func:`circuit_layer` moves one circuit layer to its dims and index, maps its heads
  onto the base's head geometry and places its MLP units among the base's
  (``units.py``: packed so that ``down_proj`` stores in few bits);
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

from qwengpu_mlx.splice.layout import RESIDUAL_SCALE, SpliceLayout
from qwengpu_mlx.splice.quantized import QuantizedBaseError, affine_format, check_affine, double, is_quantized, pack_exact
from qwengpu_mlx.splice.units import unit_slots

PREFIX = "language_model.model."
_LAYER = re.compile(r"^language_model\.model\.layers\.(\d+)\.(.+)$")
IN_SIDE = ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "q_proj", "k_proj", "v_proj",
            "gate_proj", "up_proj")
OUT_SIDE = ("out_proj", "o_proj", "down_proj")


def _pad_columns(w: mx.array, width: int, offset: int) -> mx.array:
    """[out, n] -> [out, width], the n columns at ``offset``, zeros elsewhere."""
    n = w.shape[-1]
    parts = [mx.zeros((w.shape[0], offset), w.dtype), w, mx.zeros((w.shape[0], width - offset - n), w.dtype)]
    return mx.concatenate([p for p in parts if p.shape[-1]], axis=-1)


def contiguous_dims(lay: SpliceLayout) -> np.ndarray:
    """The circuit's dims in the combined residual: ``[H, H + C)``, in order."""
    return lay.circuit_offset + np.arange(lay.circuit_hidden)


ISOLATION_GROUPS = (128, 64, 32)  # widest first: a dim alone in a 128-group is alone in any smaller one
NARROW_BITS = 3  # an in-projection weight of more significant bits than this is a threshold's


def significant_bits(v: np.ndarray) -> np.ndarray:
    """Significant bits of each float32 value's mantissa (0 for 0): 1 for a power of two."""
    m = (np.abs(np.frexp(v.astype(np.float32))[0]) * 2.0 ** 24).astype(np.int64)
    low = m & -m
    return np.where(m > 0, 24 - np.log2(np.where(low > 0, low, 1)).astype(np.int64), 0)


def wide_columns(parts: Iterable[dict[str, mx.array]]) -> np.ndarray:
    """Circuit dims that some in-projection weighs with more than ``NARROW_BITS`` significant
    bits (thresholds, the constant dims), most bits first.

    Why: a storage group (``storage.py``) holds one grid per row; a threshold of 14 bits
    beside the levels ``-32768, 32768`` in one group leaves no few-bit grid, while alone in
    its group it is ``{0, t}``. ``circuit_dims`` gives these dims groups of their own."""
    most: dict[int, int] = {}
    for part in parts:
        for name, w in part.items():
            if module_of(name) not in IN_SIDE or w.ndim != 2:
                continue
            a = np.array(w.astype(mx.float32))
            cols = np.nonzero(a)[1]
            bits = significant_bits(a[a != 0])
            for c, b in zip(cols[bits > NARROW_BITS].tolist(), bits[bits > NARROW_BITS].tolist()):
                most[c] = max(most.get(c, 0), b)
    return np.array(sorted(most, key=lambda c: (-most[c], c)), np.int64)


def _embedding_wide(circuit_embedding: mx.array) -> np.ndarray:
    """Dims where a launch row holds a value other than -1, 0 or 1 (the machine's ``ONE``)."""
    E = np.array(circuit_embedding.astype(mx.float32))
    return np.nonzero(np.any(~np.isin(E, (-1.0, 0.0, 1.0)), axis=0))[0]


def circuit_dims(lay: SpliceLayout, circuit_embedding: mx.array, group_size: int | None,
                 extra: Iterable[int] = ()) -> np.ndarray:
    """Where each circuit dim goes in the combined residual.

    In order from ``H``, except the wide dims, each moved to a group of its own past the
    circuit: first every dim where a launch row holds ``ONE`` (so every group of a
    quantized embedding's launch rows holds levels one scale and bias give exactly,
    ``quantized.py``), then as many of ``extra`` (``wide_columns``) as there is room
    for (so the circuit's matrices take few-bit groups, ``storage.py``). The groups are
    the widest of ``ISOLATION_GROUPS`` that holds the launch rows' wide dims and is at
    least ``group_size`` (a quantized embedding's); a dense base without room keeps the
    order. Every circuit tensor is placed by the same map, so the circuit computes what
    it did."""
    dims = contiguous_dims(lay)
    wide = _embedding_wide(circuit_embedding)
    for gs in ISOLATION_GROUPS:
        if gs < (group_size or 0):
            break
        first = -(-(lay.circuit_offset + lay.circuit_hidden) // gs) * gs
        room = (lay.hidden - first) // gs
        if room >= len(wide):
            more = [c for c in extra if c not in set(wide.tolist())][: room - len(wide)]
            moved = np.concatenate([wide, np.array(more, np.int64)]).astype(np.int64)
            dims = dims.copy()
            dims[moved] = first + gs * np.arange(len(moved))
            return dims
    if group_size is None:
        return dims
    raise QuantizedBaseError(f"the circuit's {len(wide)} wide dims need a {group_size}-dim group each past "
                             f"its {lay.circuit_hidden} dims, more than the combined width {lay.hidden} holds")


def contiguous_runs(dims: np.ndarray) -> list[tuple[int, int, int]]:
    """(first k, dims[k], length) of each run of consecutive dims: the circuit's dims are
    in order but for the few moved to groups of their own (:func:`circuit_dims`)."""
    breaks = np.flatnonzero(np.diff(dims) != 1) + 1
    starts, ends = np.concatenate([[0], breaks]), np.concatenate([breaks, [len(dims)]])
    return [(int(a), int(dims[a]), int(b - a)) for a, b in zip(starts, ends)]


def _spread_columns(w: mx.array, width: int, dims: np.ndarray) -> mx.array:
    """[out, C] -> [out, width], column k at ``dims[k]``, zeros elsewhere (copied a run of
    columns at a time: a scattered copy of a 6,144 x 2,048 matrix took seconds)."""
    src = np.array(w.astype(mx.float32))
    out = np.zeros((w.shape[0], width), np.float32)
    for k, d, n in contiguous_runs(dims):
        out[:, d:d + n] = src[:, k:k + n]
    return mx.array(out).astype(w.dtype)


def _spread_rows(w: mx.array, height: int, dims: np.ndarray) -> mx.array:
    """[C, ...] -> [height, ...], row k at ``dims[k]``, zeros elsewhere."""
    out = np.zeros((height, *w.shape[1:]), np.float32)
    out[dims] = np.array(w.astype(mx.float32))
    return mx.array(out).astype(w.dtype)


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


def module_path(name: str) -> str:
    """``mlp.gate_proj.scales`` -> ``mlp.gate_proj``."""
    return name.rsplit(".", 1)[0]


def _widen(w: mx.array, factor: int) -> mx.array:
    """A quantized tensor of an input projection with zero groups for the circuit's dims:
    codes, scales and biases all scale with the input width, so one factor widens each."""
    return _pad_columns(w, factor * w.shape[-1], 0)


def base_layer(params: dict[str, mx.array], lay: SpliceLayout) -> dict[str, mx.array]:
    """One base layer's tensors (names after ``layers.{i}.``) in the combined width; an
    affine-quantized module keeps its codes (``quantized.py``: zero groups, doubled scales)."""
    for name, scales in params.items():
        if name.endswith(".scales"):
            check_affine(scales, params.get(module_path(name) + ".biases"), "base layer " + module_path(name))
    factor = lay.hidden // lay.base_hidden
    out = {}
    for name, w in params.items():
        role, packed = tensor_role(name), module_path(name) + ".scales" in params
        if role == "norm":
            out[name] = _pad_rows(w / RESIDUAL_SCALE, lay.hidden, 0)
        elif role == "in":
            out[name] = _widen(w, factor) if packed else _pad_columns(w, lay.hidden, 0)
        elif role == "out":
            out[name] = _pad_rows(double(name, w) if packed else w * RESIDUAL_SCALE, lay.hidden, 0)
        else:  # conv1d, A_log, dt_bias, the heads' own norms: no hidden dim
            out[name] = w
    return out


def _circuit_norm(lay: SpliceLayout, dims: np.ndarray, dtype) -> mx.array:
    """A circuit layer's input norm: ``K / sqrt(4 H)`` on the circuit's dims, 0 elsewhere."""
    w = np.zeros((lay.hidden,), np.float32)
    w[dims] = DEFAULT_LEVELS.norm_weight(lay.hidden)
    return mx.array(w).astype(dtype)


def _value_channels(lay: SpliceLayout, heads: int, dv: int) -> np.ndarray:
    """Base value channels (head-major) the circuit's value channels go to, in order."""
    return np.concatenate([lay.value_head(h) * dv + np.arange(dv) for h in range(heads)])


def _circuit_mixer(params: dict[str, mx.array], lay: SpliceLayout, dims: np.ndarray) -> dict[str, mx.array]:
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
    out[p + "in_proj_qkv.weight"] = _spread_columns(place(qkv, qkv_out, qkv_index), lay.hidden, dims)
    out[p + "conv1d.weight"] = place(params[p + "conv1d.weight"], qkv_out, qkv_index)
    out[p + "in_proj_z.weight"] = _spread_columns(place(params[p + "in_proj_z.weight"], Hv * Dv, vch), lay.hidden,
                                                  dims)
    for k in ("in_proj_b.weight", "in_proj_a.weight"):
        out[p + k] = _spread_columns(place(params[p + k], Hv, heads), lay.hidden, dims)
    for k in ("A_log", "dt_bias"):
        out[p + k] = place(params[p + k], Hv, heads)
    out[p + "norm.weight"] = params[p + "norm.weight"]
    o = params[p + "out_proj.weight"]  # [C, Hc * Dv]
    cols = np.zeros((o.shape[0], Hv * Dv), np.float32)
    cols[:, vch] = np.array(o.astype(mx.float32))
    out[p + "out_proj.weight"] = _spread_rows(mx.array(cols), lay.hidden, dims)
    return out


def _inert_attention(lay: SpliceLayout) -> dict[str, mx.array]:
    """A circuit layer at a full-attention index: all-zero attention in the base's shapes."""
    b = lay.base
    D, Hq, KV = b["head_dim"], b["num_attention_heads"], b["num_key_value_heads"]
    p, H = "self_attn.", lay.hidden
    return {p + "q_proj.weight": mx.zeros((2 * Hq * D, H)), p + "k_proj.weight": mx.zeros((KV * D, H)),
            p + "v_proj.weight": mx.zeros((KV * D, H)), p + "o_proj.weight": mx.zeros((H, Hq * D)),
            p + "q_norm.weight": mx.ones((D,)), p + "k_norm.weight": mx.ones((D,))}


def circuit_layer(params: dict[str, mx.array], index: int, lay: SpliceLayout,
                  dims: np.ndarray | None = None) -> dict[str, mx.array]:
    """Circuit layer ``index``'s tensors (names after ``layers.{i}.``) in the combined model,
    its dims at ``dims`` (:func:`circuit_dims`; default in order from ``H``)."""
    dims = contiguous_dims(lay) if dims is None else dims
    out = {"input_layernorm.weight": _circuit_norm(lay, dims, mx.float32),
           "post_attention_layernorm.weight": _circuit_norm(lay, dims, mx.float32)}
    if "linear_attn.in_proj_qkv.weight" in params:
        out.update(_circuit_mixer(params, lay, dims))
    else:
        out.update(_inert_attention(lay))
    inter = lay.base["intermediate_size"]
    d = np.array(params["mlp.down_proj.weight"].astype(mx.float32))  # [C, I_c]
    slots = unit_slots(d, inter)  # the units packed so down_proj's groups keep one sign (units.py)
    for k in ("gate_proj", "up_proj"):
        w = _spread_rows(params[f"mlp.{k}.weight"], inter, slots)
        out[f"mlp.{k}.weight"] = _spread_columns(w, lay.hidden, dims)
    placed = np.zeros((d.shape[0], inter), np.float32)
    placed[:, slots] = d
    out["mlp.down_proj.weight"] = _spread_rows(mx.array(placed), lay.hidden, dims)
    return {k: v.astype(mx.float32) for k, v in out.items()}


def _final_norm(base_final_norm: mx.array, circuit_final_norm: mx.array, lay: SpliceLayout,
                dims: np.ndarray) -> mx.array:
    """The base's final norm quartered (its residual and its tied rows are both doubled), the
    circuit's output dims at ``K / sqrt(4 H)``, so the circuit's logits are its own."""
    fn_base = _pad_rows(base_final_norm / (RESIDUAL_SCALE * RESIDUAL_SCALE), lay.hidden, 0)
    circ = np.array(circuit_final_norm.astype(mx.float32)) != 0
    fn = np.zeros((lay.hidden,), np.float32)
    fn[dims[np.nonzero(circ)[0]]] = DEFAULT_LEVELS.norm_weight(lay.hidden)
    return fn_base + mx.array(fn).astype(fn_base.dtype)


def _launch_rows(circuit_embedding: mx.array, lay: SpliceLayout, dims: np.ndarray) -> mx.array:
    """The launch rows' circuit part [N, 4 H] (zero in the base's dims)."""
    return _spread_columns(circuit_embedding.astype(mx.float32), lay.hidden, dims)


def _dense_embedding(base_embedding: mx.array, circuit_embedding: mx.array, launch_base_row: mx.array,
                     lay: SpliceLayout, dims: np.ndarray) -> dict[str, mx.array]:
    dtype = base_embedding.dtype
    base_rows = _pad_columns(base_embedding * RESIDUAL_SCALE, lay.hidden, 0)
    shared = _pad_columns((launch_base_row * RESIDUAL_SCALE).astype(mx.float32)[None, :], lay.hidden, 0)
    rows = mx.concatenate([base_rows, (_launch_rows(circuit_embedding, lay, dims) + shared).astype(dtype)], axis=0)
    return {PREFIX + "embed_tokens.weight": rows}


def _quantized_shared_row(row: mx.array, gs: int, bits: int, dtype) -> tuple[mx.array, ...]:
    """The launch rows' shared part [H], doubled, as a quantized embedding stores it [1, ...]:
    what ``launch_row_as_held`` checks the launch mass on is what the embedding writes."""
    return mx.quantize((row * RESIDUAL_SCALE).astype(dtype)[None, :], group_size=gs, bits=bits)


def _quantized_embedding(base: dict[str, mx.array], circuit_embedding: mx.array, launch_base_row: mx.array,
                         lay: SpliceLayout, dims: np.ndarray) -> dict[str, mx.array]:
    """The embedding kept in the base's affine format: base rows' codes as they are (scales
    and biases doubled, zero groups for the circuit's dims); launch rows packed exactly in
    the circuit's dims, the shared part as mlx quantizes it (``quantized.py``)."""
    m = PREFIX + "embed_tokens"
    packed, scales, biases = base[m + ".weight"], base[m + ".scales"], base[m + ".biases"]
    gs, bits = embedding_format(base, lay)
    factor, dtype = lay.hidden // lay.base_hidden, scales.dtype
    shared = _quantized_shared_row(launch_base_row, gs, bits, dtype)
    circ = np.array(_launch_rows(circuit_embedding, lay, dims))[:, lay.base_hidden:]
    exact = pack_exact(circ, gs, bits, dtype)
    n = circ.shape[0]
    launch = [mx.concatenate([mx.broadcast_to(a, (n, a.shape[-1])), b], axis=-1) for a, b in zip(shared, exact)]
    base_parts = (_widen(packed, factor), _widen(scales * 2, factor), _widen(biases * 2, factor))
    return {m + k: mx.concatenate([p, q.astype(p.dtype)], axis=0)
            for k, p, q in zip((".weight", ".scales", ".biases"), base_parts, launch)}


def launch_row_as_held(base_top: dict[str, mx.array], lay: SpliceLayout):
    """The launch rows' shared part [H] as the combined embedding will hold it (a function
    for ``logits.suppression_row``): the base's dtype, rounded to its format if quantized."""
    m = PREFIX + "embed_tokens"
    fmt = embedding_format(base_top, lay)
    if fmt is None:
        dtype = base_top[m + ".weight"].dtype
        return lambda row: np.array(mx.array(row.astype(np.float32)).astype(dtype).astype(mx.float32))
    gs, bits = fmt
    dtype = base_top[m + ".scales"].dtype

    def held(row: np.ndarray) -> np.ndarray:
        stored = _quantized_shared_row(mx.array(row.astype(np.float32)), gs, bits, dtype)
        back = mx.dequantize(*stored, group_size=gs, bits=bits)
        return np.array(back[0].astype(mx.float32)) / RESIDUAL_SCALE

    return held


def embedding_format(base_top: dict[str, mx.array], lay: SpliceLayout) -> tuple[int, int] | None:
    """(group_size, bits) of a quantized base embedding, None for a dense one."""
    m = PREFIX + "embed_tokens"
    if not is_quantized(base_top):
        return None
    return affine_format(base_top[m + ".weight"], base_top[m + ".scales"], base_top.get(m + ".biases"),
                         lay.base_hidden, "the embedding")


def embedding_and_norm(base_top: dict[str, mx.array], circuit_embedding: mx.array, circuit_final_norm: mx.array,
                       launch_base_row: mx.array, lay: SpliceLayout, dims: np.ndarray) -> dict:
    """The tied embedding [base rows + launch rows, 4 H] and the final norm [4 H].

    Base rows: doubled, in the base's dims. Launch rows: the circuit's row in its dims
    plus ``launch_base_row`` (shared by all, ``logits.py``) in the base's dims. A quantized
    base's embedding stays quantized (``_quantized_embedding``)."""
    emb = (_quantized_embedding(base_top, circuit_embedding, launch_base_row, lay, dims) if is_quantized(base_top)
           else _dense_embedding(base_top[PREFIX + "embed_tokens.weight"], circuit_embedding, launch_base_row, lay,
                                 dims))
    final = _final_norm(base_top[PREFIX + "norm.weight"], circuit_final_norm, lay, dims)
    return {**emb, PREFIX + "norm.weight": final}


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
                    launch_base_row: mx.array, lay: SpliceLayout,
                    wide: Iterable[int] = ()) -> Iterator[dict[str, mx.array]]:
    """The combined model's tensors, one shard at a time: embedding and final norm, then
    each base layer, then each circuit layer (one layer dense in memory at a time);
    ``wide``: the circuit dims to isolate after the launch rows' own (``circuit_dims``)."""
    top, base_layers = split_layers(base)
    circuit_parts = iter(circuit_parts)
    ctop = next(circuit_parts)
    emb = ctop[PREFIX + "embed_tokens.weight"]
    fmt = embedding_format(top, lay)
    dims = circuit_dims(lay, emb, fmt[0] if fmt else None, wide)
    yield embedding_and_norm(top, emb, ctop[PREFIX + "norm.weight"], launch_base_row, lay, dims)
    for i in range(lay.base_layers):
        yield {f"{PREFIX}layers.{i}.{k}": v for k, v in base_layer(base_layers[i], lay).items()}
    for j, part in enumerate(circuit_parts):
        _, cl = split_layers(part)
        (params,) = cl.values()
        i = lay.base_layers + j
        yield {f"{PREFIX}layers.{i}.{k}": v for k, v in circuit_layer(params, j, lay, dims).items()}
