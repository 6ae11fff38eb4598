"""Zero-pad a Qwen3.5 base to a larger geometry with its logits unchanged (bit for bit in practice).

Why: the circuit needs a base of at least its own sizes (``layout.splice_misfits``:
hidden >= 683, MLP >= 6144, >= 16 linear key heads), and a toy base (the demo chat
model, hidden 64) is far smaller. Widening adds only units and heads that compute exact
zeros, and scales the residual stream so every RMSNorm sees the base's own mean:

* **hidden** ``H -> f H`` (``f`` a power of 4): RMSNorm averages ``x^2`` over all ``f H``
  dims, so the base's stream is stored times ``s = sqrt(f)`` (a power of two) in its
  first ``H`` dims, zeros elsewhere: the mean of ``(s x)^2`` over ``f H`` dims is the
  base's own, ``rms_norm_eps`` included (it stays as it is, so the head norms inside the
  mixers, which do not widen, keep theirs too). The embedding and every output projection
  (``out_proj``, ``o_proj``, ``down_proj``) are multiplied by ``s``, the layer norms
  divided by ``s``, the final norm by ``s^2`` (the tied embedding is ``s`` times too), and
  every input projection gets zero columns. Power-of-two factors are exact in float32,
  bfloat16 and float16. (Scaling ``rms_norm_eps`` by ``1/f`` instead would be exact only
  for the hidden-wide norms: the per-head norms of q, k and the Gated DeltaNet output
  read the same eps over unwidened dims.)
* **intermediate**: zero MLP units (``silu(0) * 0 = 0`` into zero ``down_proj`` columns).
* **linear heads** ``Hk -> Hk'``, ``Hv -> Hv'``: zero heads (zero q, k, v, z rows and conv
  channels: silu(0) = 0, nothing is written, the output is 0 into zero ``out_proj``
  columns). mlx-lm repeats key head ``j`` for value heads ``j r .. j r + r - 1`` (``r =
  Hv / Hk``), so the base's value head ``i`` goes to ``(i // r) r' + i % r``: it keeps
  its key head as long as ``r' >= r``.
* attention geometry is left as it is (the circuit's attention layers are inert).

Exactness: every number a base position computes is the base's own (times a power of
two) plus exact zeros. Whether the kernels give bitwise-equal sums over the longer,
zero-padded rows is the kernels' business; ``tests/splice/test_widen.py`` measures it (float32,
mlx CPU: bit-exact logits).
"""

from __future__ import annotations

import math

import mlx.core as mx
import numpy as np

from qwengpu_mlx.splice.weights import IN_SIDE, OUT_SIDE, module_of

GDN_KEYS = ("linear_num_key_heads", "linear_num_value_heads")


class WidenError(ValueError):
    """The target geometry cannot hold the base exactly."""


def _residual_scale(H: int, H2: int) -> float:
    """``sqrt(H2 / H)``: must be a power of two for exact scaling."""
    if H2 % H or H2 < H:
        raise WidenError(f"hidden {H2} is not a multiple of the base's {H}")
    f = H2 // H
    s = math.isqrt(f)
    if s * s != f or s & (s - 1):
        raise WidenError(f"hidden factor {f} is not a power of 4 (its square root scales the residual exactly)")
    return float(s)


def _head_index(c: dict, t: dict) -> tuple[np.ndarray, np.ndarray]:
    """New positions of the base's key heads and value heads."""
    Hk, Hv, Hk2, Hv2 = c["linear_num_key_heads"], c["linear_num_value_heads"], t["linear_num_key_heads"], \
        t["linear_num_value_heads"]
    r, r2 = Hv // Hk, Hv2 // Hk2
    if Hk2 < Hk or Hv2 % Hk2 or r2 < r:
        raise WidenError(f"linear heads {Hk2}/{Hv2} cannot hold the base's {Hk}/{Hv} with their key heads")
    return np.arange(Hk), np.array([(i // r) * r2 + i % r for i in range(Hv)])


def _channels(heads: np.ndarray, dim: int) -> np.ndarray:
    """Channel indices of whole heads (head-major, ``dim`` per head)."""
    return (heads[:, None] * dim + np.arange(dim)[None, :]).reshape(-1)


def _place(w: mx.array, axis: int, n: int, index: np.ndarray) -> mx.array:
    """``w`` with its ``axis`` spread to length ``n``: entry ``k`` to ``index[k]``, zeros elsewhere."""
    if n == w.shape[axis] and np.array_equal(index, np.arange(n)):
        return w
    shape = list(w.shape)
    shape[axis] = n
    out = np.zeros(shape, np.float32)
    moved = np.moveaxis(out, axis, 0)
    moved[index] = np.moveaxis(np.array(w.astype(mx.float32)), axis, 0)
    return mx.array(out).astype(w.dtype)


def _pad(w: mx.array, axis: int, n: int) -> mx.array:
    return _place(w, axis, n, np.arange(w.shape[axis]))


def _mixer_rows(name: str, c: dict, t: dict) -> tuple[int, np.ndarray] | None:
    """(new length, index) of a Gated DeltaNet tensor's head axis, or None if it has none."""
    kh, vh = _head_index(c, t)
    Dk, Dv = c["linear_key_head_dim"], c["linear_value_head_dim"]
    Hk2, Hv2 = t["linear_num_key_heads"], t["linear_num_value_heads"]
    mod = module_of(name)
    if mod in ("in_proj_qkv", "conv1d"):  # [q heads | k heads | v heads]
        q = _channels(kh, Dk)
        return 2 * Hk2 * Dk + Hv2 * Dv, np.concatenate([q, Hk2 * Dk + q, 2 * Hk2 * Dk + _channels(vh, Dv)])
    if mod == "in_proj_z":
        return Hv2 * Dv, _channels(vh, Dv)
    if mod in ("in_proj_b", "in_proj_a") or name.endswith(("A_log", "dt_bias")):
        return Hv2, vh
    if mod == "out_proj":
        return Hv2 * Dv, _channels(vh, Dv)  # its columns
    return None


def _layer_tensor(name: str, w: mx.array, c: dict, t: dict, s: float) -> mx.array:
    """One layer tensor (name after ``layers.{i}.``) in the target geometry."""
    H2, I2 = t["hidden_size"], t["intermediate_size"]
    mod = module_of(name)
    if name.endswith("layernorm.weight"):
        return _pad(w / s, 0, H2)
    if name.startswith("linear_attn."):
        heads = _mixer_rows(name, c, t)
        if heads is not None:
            n, index = heads
            w = _place(w, 1 if mod == "out_proj" else 0, n, index)
    if mod in ("gate_proj", "up_proj"):
        w = _pad(w, 0, I2)
    elif mod == "down_proj":
        w = _pad(w, 1, I2)
    if mod in IN_SIDE:
        return _pad(w, 1, H2)
    if mod in OUT_SIDE:
        return _pad(w * s, 0, H2)
    return w  # conv1d (heads placed above), A_log, dt_bias, q/k norms, the gated norm


def target_config(text_config: dict, target: dict) -> dict:
    """The base's text config with the target sizes (unnamed sizes stay the base's)."""
    keys = ("hidden_size", "intermediate_size") + GDN_KEYS
    unknown = set(target) - set(keys)
    if unknown:
        raise WidenError(f"cannot widen {sorted(unknown)} (only {', '.join(keys)})")
    out = {**text_config, **{k: int(target.get(k, text_config[k])) for k in keys}}
    if out["intermediate_size"] < text_config["intermediate_size"]:
        raise WidenError("the target MLP is narrower than the base's")
    return out


def widen(weights: dict[str, mx.array], text_config: dict, target: dict) -> tuple[dict[str, mx.array], dict]:
    """Zero-pad mlx-lm-named base tensors to ``target``'s sizes; returns (tensors, text config).

    ``target`` may name ``hidden_size`` (a power-of-4 multiple), ``intermediate_size``,
    ``linear_num_key_heads`` and ``linear_num_value_heads``. The base must tie its
    embeddings (the output rows are the widened embedding)."""
    c = dict(text_config)
    t = target_config(c, target)
    if not c.get("tie_word_embeddings", True) or any(k.endswith("lm_head.weight") for k in weights):
        raise WidenError("only a base with tied embeddings is widened")
    if any(k.endswith(".scales") for k in weights):
        raise WidenError("quantized bases are not widened (a float one is)")
    s = _residual_scale(c["hidden_size"], t["hidden_size"])
    out = {}
    for name, w in weights.items():
        short = name.split("layers.", 1)[1].split(".", 1)[1] if ".layers." in name else None
        if short is not None:
            out[name] = _layer_tensor(short, w, c, t, s)
        elif name.endswith("embed_tokens.weight"):
            out[name] = _pad(w * s, 1, t["hidden_size"])
        elif name.endswith("model.norm.weight"):
            out[name] = _pad(w / (s * s), 0, t["hidden_size"])
        else:
            raise WidenError(f"unknown base tensor {name}")
    mx.eval(out)
    return out, t
