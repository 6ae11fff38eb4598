"""The Qwen3.5 text model in one file, plain MLX.

Same parameter names, config keys and arithmetic as mlx-lm's ``models/qwen3_5.py``
(dense, text only), so one weights dict loads into both and both give the same logits
(bit-identical on CPU; ``tests/runtime/test_model.py`` checks it). The parameter tree is::

    language_model.model.embed_tokens.weight                       [vocab, hidden]
    language_model.model.layers.{i}.input_layernorm.weight         [hidden]
    language_model.model.layers.{i}.post_attention_layernorm.weight
    language_model.model.layers.{i}.mlp.{gate,up,down}_proj.weight
    # Gated DeltaNet layers ((i + 1) % full_attention_interval != 0):
    language_model.model.layers.{i}.linear_attn.in_proj_qkv.weight [2*Hk*Dk + Hv*Dv, hidden]
    language_model.model.layers.{i}.linear_attn.in_proj_z.weight   [Hv*Dv, hidden]
    language_model.model.layers.{i}.linear_attn.in_proj_b.weight   [Hv, hidden]
    language_model.model.layers.{i}.linear_attn.in_proj_a.weight   [Hv, hidden]
    language_model.model.layers.{i}.linear_attn.conv1d.weight      [conv_dim, K, 1]
    language_model.model.layers.{i}.linear_attn.dt_bias / A_log    [Hv]
    language_model.model.layers.{i}.linear_attn.norm.weight        [Dv]
    language_model.model.layers.{i}.linear_attn.out_proj.weight    [hidden, Hv*Dv]
    # full-attention layers:
    language_model.model.layers.{i}.self_attn.q_proj.weight        [2*heads*head_dim, hidden]
    language_model.model.layers.{i}.self_attn.{k,v}_proj.weight    [kv_heads*head_dim, hidden]
    language_model.model.layers.{i}.self_attn.o_proj.weight        [hidden, heads*head_dim]
    language_model.model.layers.{i}.self_attn.{q,k}_norm.weight    [head_dim]
    language_model.model.norm.weight                               [hidden]
    language_model.lm_head.weight                                  [vocab, hidden] (untied only)

All norm weights are final values (MLX layout); see :meth:`Model.sanitize` for the
HF layout (zero-centred norms, conv axis order).

Caches: :meth:`Model.make_cache` gives one cache per layer, a :class:`LinearCache`
(``conv_state`` [B, K-1, conv_dim], ``state`` [B, Hv, Dv, Dk] float32) for Gated
DeltaNet layers and a :class:`KVCache` for full-attention layers. The recurrent state
is ``state[b, h, dv, dk]``: value head ``h``, row ``dv`` (value dim), column ``dk`` (key
dim), the same array and layout as mlx-lm's ``ArraysCache[1]``. A write with one-hot
key ``e_j`` updates column ``j``; see :mod:`qwengpu_mlx.runtime.recurrent`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any, Dict, List, Optional, Union

import mlx.core as mx
import mlx.nn as nn

from qwengpu_mlx.runtime.recurrent import gated_delta_update, normalize_qk

__all__ = [
    "ModelConfig",
    "Model",
    "LinearCache",
    "KVCache",
    "recurrent_state",
    "set_recurrent_state",
]


# ------------------------------------------------------------------------ config


def _default_rope_parameters() -> dict:
    return {
        "type": "default",
        "mrope_section": [11, 11, 10],
        "rope_theta": 100000,
        "partial_rotary_factor": 0.25,
    }


@dataclass
class ModelConfig:
    """The Qwen3.5 text config. Keys and defaults are mlx-lm's ``TextModelArgs``.

    As in mlx-lm, a truthy ``rope_parameters`` dict (the Qwen3.5 config.json form)
    overrides the flat ``rope_theta`` / ``partial_rotary_factor`` keys, and the default
    ``rope_parameters`` is not empty: write ``rope_parameters`` to set the rope.
    """

    model_type: str = "qwen3_5_text"
    hidden_size: int = 4096
    intermediate_size: int = 14336
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int = 8
    head_dim: Optional[int] = None
    rms_norm_eps: float = 1e-6
    vocab_size: int = 151936
    max_position_embeddings: int = 131072
    linear_num_value_heads: int = 64
    linear_num_key_heads: int = 16
    linear_key_head_dim: int = 192
    linear_value_head_dim: int = 128
    linear_conv_kernel_dim: int = 4
    full_attention_interval: int = 4
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    attn_output_gate: bool = True
    num_experts: int = 0
    rope_parameters: Optional[Dict[str, Any]] = field(default_factory=_default_rope_parameters)
    partial_rotary_factor: float = 0.25
    rope_theta: float = 100000.0

    def __post_init__(self):
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        rope = self.rope_parameters
        if rope:
            rope = dict(rope)
            if "type" not in rope and "rope_type" in rope:
                rope["type"] = rope.pop("rope_type")
            self.rope_parameters = rope
            self.partial_rotary_factor = rope.get("partial_rotary_factor", 0.25)
            self.rope_theta = rope.get("rope_theta", 100000.0)
            if rope.get("type", "default") != "default":
                raise NotImplementedError(f"rope type {rope.get('type')!r}")
        if self.num_experts > 0:
            raise NotImplementedError("MoE Qwen3.5 models are not supported")
        if not self.attn_output_gate:
            # mlx-lm's qwen3_5 attention always has the output gate (q_proj is 2x).
            raise NotImplementedError("attn_output_gate=False is not supported by mlx-lm")
        if self.linear_num_value_heads % self.linear_num_key_heads:
            raise ValueError("linear_num_value_heads must be a multiple of linear_num_key_heads")
        if self.num_hidden_layers < self.full_attention_interval:
            # mlx-lm indexes layer full_attention_interval - 1 for the attention mask.
            raise ValueError("num_hidden_layers must be >= full_attention_interval (mlx-lm)")

    @classmethod
    def from_dict(cls, config: dict) -> "ModelConfig":
        """From a text config or a full config.json (``text_config`` nested or flat)."""
        if "text_config" in config:
            config = config["text_config"]
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in config.items() if k in names})

    def is_linear(self, layer: int) -> bool:
        """True for a Gated DeltaNet layer, False for a full-attention layer."""
        return (layer + 1) % self.full_attention_interval != 0


# ------------------------------------------------------------------------ caches


class LinearCache:
    """Cache of one Gated DeltaNet layer.

    ``conv_state``: the last ``K-1`` pre-conv ``qkv`` rows, ``[B, K-1, conv_dim]``
    (None before the first token). ``state``: recurrent state ``[B, Hv, Dv, Dk]``
    float32. ``offset``: tokens seen.
    """

    def __init__(self, state: Optional[mx.array] = None):
        self.conv_state: Optional[mx.array] = None
        self.state: Optional[mx.array] = state
        self.offset = 0


class KVCache:
    """Keys/values of one full-attention layer, ``[B, kv_heads, T, head_dim]``.

    Grows in steps of 256 positions like mlx-lm's ``KVCache`` (the attention then
    reads the same sliced views, so results match it bit for bit).
    """

    step = 256

    def __init__(self):
        self.keys: Optional[mx.array] = None
        self.values: Optional[mx.array] = None
        self.offset = 0

    def update_and_fetch(self, keys: mx.array, values: mx.array):
        prev = self.offset
        if self.keys is None or prev + keys.shape[2] > self.keys.shape[2]:
            B, H, _, Dk = keys.shape
            n = (self.step + keys.shape[2] - 1) // self.step * self.step
            new_k = mx.zeros((B, H, n, Dk), keys.dtype)
            new_v = mx.zeros((B, H, n, values.shape[3]), values.dtype)
            if self.keys is None:
                self.keys, self.values = new_k, new_v
            else:
                if prev % self.step != 0:
                    self.keys = self.keys[..., :prev, :]
                    self.values = self.values[..., :prev, :]
                self.keys = mx.concatenate([self.keys, new_k], axis=2)
                self.values = mx.concatenate([self.values, new_v], axis=2)
        self.offset += keys.shape[2]
        self.keys[..., prev : self.offset, :] = keys
        self.values[..., prev : self.offset, :] = values
        if self.offset < self.keys.shape[2]:
            return self.keys[..., : self.offset, :], self.values[..., : self.offset, :]
        return self.keys, self.values

    @property
    def state(self):
        """The arrays to evaluate (what mlx-lm's generator passes to ``mx.eval``)."""
        return self.keys, self.values


Cache = List[Union[LinearCache, KVCache]]


def recurrent_state(cache: Cache, layer: int) -> mx.array:
    """The recurrent state of Gated DeltaNet ``layer``: float32 ``[B, Hv, Dv, Dk]``,
    ``state[b, h, dv, dk]`` (row = value dim, column = key dim)."""
    c = cache[layer]
    if not isinstance(c, LinearCache):
        raise ValueError(f"layer {layer} is a full-attention layer (no recurrent state)")
    return c.state


def set_recurrent_state(cache: Cache, layer: int, state: mx.array) -> None:
    """Replace the recurrent state of Gated DeltaNet ``layer`` (float32 [B, Hv, Dv, Dk])."""
    c = cache[layer]
    if not isinstance(c, LinearCache):
        raise ValueError(f"layer {layer} is a full-attention layer (no recurrent state)")
    if c.state is not None and c.state.shape != state.shape:
        raise ValueError(f"state shape {state.shape} != {c.state.shape}")
    c.state = state.astype(mx.float32)


# ------------------------------------------------------------------ activations


@partial(mx.compile, shapeless=True)
def swiglu(gate: mx.array, x: mx.array) -> mx.array:
    return nn.silu(gate) * x


@partial(mx.compile, shapeless=True)
def precise_swiglu(h: mx.array, gate: mx.array, x: mx.array) -> mx.array:
    """``silu(gate) * x`` in float32, cast to ``h.dtype`` (the gated norm's output)."""
    return (nn.silu(gate.astype(mx.float32)) * x.astype(mx.float32)).astype(h.dtype)


# ----------------------------------------------------------------------- layers


class MLP(nn.Module):
    """SwiGLU: ``down(silu(gate(x)) * up(x))``."""

    def __init__(self, dim: int, hidden_dim: int):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)

    def __call__(self, x: mx.array) -> mx.array:
        return self.down_proj(swiglu(self.gate_proj(x), self.up_proj(x)))


class RMSNormGated(nn.Module):
    """``rms_norm(y) * weight * silu(z)`` per value head (weight is never HF-shifted)."""

    def __init__(self, dims: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = mx.ones(dims)

    def __call__(self, y: mx.array, z: mx.array) -> mx.array:
        return precise_swiglu(y, z, mx.fast.rms_norm(y, self.weight, self.eps))


class GatedDeltaNet(nn.Module):
    """Gated DeltaNet linear attention. The forward is a chain of small steps
    (:meth:`project`, :meth:`convolve`, :meth:`split_heads`, :meth:`recur`,
    :meth:`project_out`) so that a pruned execution path can replace single steps."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.hidden_size = cfg.hidden_size
        self.num_k_heads = cfg.linear_num_key_heads
        self.num_v_heads = cfg.linear_num_value_heads
        self.head_k_dim = cfg.linear_key_head_dim
        self.head_v_dim = cfg.linear_value_head_dim
        self.key_dim = self.num_k_heads * self.head_k_dim
        self.value_dim = self.num_v_heads * self.head_v_dim
        self.conv_kernel_size = cfg.linear_conv_kernel_dim
        self.conv_dim = 2 * self.key_dim + self.value_dim

        # Depthwise causal conv; weight [conv_dim, K, 1], tap K-1 is the current token.
        self.conv1d = nn.Conv1d(
            self.conv_dim,
            self.conv_dim,
            kernel_size=self.conv_kernel_size,
            groups=self.conv_dim,
            padding=0,
            bias=False,
        )
        self.in_proj_qkv = nn.Linear(self.hidden_size, self.conv_dim, bias=False)
        self.in_proj_z = nn.Linear(self.hidden_size, self.value_dim, bias=False)
        self.in_proj_b = nn.Linear(self.hidden_size, self.num_v_heads, bias=False)
        self.in_proj_a = nn.Linear(self.hidden_size, self.num_v_heads, bias=False)
        self.dt_bias = mx.ones(self.num_v_heads)
        self.A_log = mx.zeros(self.num_v_heads)
        self.norm = RMSNormGated(self.head_v_dim, eps=cfg.rms_norm_eps)
        self.out_proj = nn.Linear(self.value_dim, self.hidden_size, bias=False)

    def project(self, x: mx.array):
        """Input projections: ``qkv [B,S,conv_dim]``, ``z [B,S,Hv,Dv]``, ``b, a [B,S,Hv]``."""
        B, S, _ = x.shape
        qkv = self.in_proj_qkv(x)
        z = self.in_proj_z(x).reshape(B, S, self.num_v_heads, self.head_v_dim)
        return qkv, z, self.in_proj_b(x), self.in_proj_a(x)

    def convolve(self, qkv: mx.array, cache: Optional[LinearCache]) -> mx.array:
        """Causal depthwise conv over the last K tokens, then SiLU; updates ``conv_state``."""
        B = qkv.shape[0]
        if cache is not None and cache.conv_state is not None:
            conv_state = cache.conv_state
        else:
            conv_state = mx.zeros((B, self.conv_kernel_size - 1, self.conv_dim), dtype=qkv.dtype)
        conv_input = mx.concatenate([conv_state, qkv], axis=1)
        if cache is not None:
            cache.conv_state = mx.contiguous(conv_input[:, -(self.conv_kernel_size - 1) :, :])
        return nn.silu(self.conv1d(conv_input))

    def split_heads(self, conv_out: mx.array):
        """``q, k [B,S,Hk,Dk]``, ``v [B,S,Hv,Dv]`` from the conv output."""
        B, S, _ = conv_out.shape
        q, k, v = mx.split(conv_out, [self.key_dim, 2 * self.key_dim], axis=-1)
        return (
            q.reshape(B, S, self.num_k_heads, self.head_k_dim),
            k.reshape(B, S, self.num_k_heads, self.head_k_dim),
            v.reshape(B, S, self.num_v_heads, self.head_v_dim),
        )

    def recur(self, q, k, v, a, b, cache: Optional[LinearCache]) -> mx.array:
        """Normalize q/k, run the gated delta rule; updates ``cache.state``. ``y [B,S,Hv,Dv]``."""
        state = cache.state if cache is not None else None
        if state is not None and state.shape[0] != q.shape[0]:
            raise ValueError(f"cache made for batch {state.shape[0]}, input batch {q.shape[0]}")
        q, k = normalize_qk(q, k, inv_scale=self.head_k_dim**-0.5, eps=1e-6)
        y, state = gated_delta_update(q, k, v, a, b, self.A_log, self.dt_bias, state)
        if cache is not None:
            cache.state = state
            cache.offset += q.shape[1]
        return y

    def project_out(self, y: mx.array, z: mx.array) -> mx.array:
        """Gated RMSNorm per head, then ``out_proj``: ``[B,S,hidden]``."""
        B, S = y.shape[:2]
        return self.out_proj(self.norm(y, z).reshape(B, S, -1))

    def __call__(self, x: mx.array, cache: Optional[LinearCache] = None) -> mx.array:
        qkv, z, b, a = self.project(x)
        q, k, v = self.split_heads(self.convolve(qkv, cache))
        y = self.recur(q, k, v, a, b, cache)
        return self.project_out(y, z)


class Attention(nn.Module):
    """Gated full attention: q/k RMSNorm per head, partial RoPE, GQA, sigmoid output gate."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.num_attention_heads = cfg.num_attention_heads
        self.num_key_value_heads = cfg.num_key_value_heads
        self.head_dim = cfg.head_dim
        self.scale = self.head_dim**-0.5
        self.rope_dims = int(self.head_dim * cfg.partial_rotary_factor)
        self.rope_theta = cfg.rope_theta
        bias = cfg.attention_bias
        H, KV, D = self.num_attention_heads, self.num_key_value_heads, self.head_dim
        self.q_proj = nn.Linear(cfg.hidden_size, 2 * H * D, bias=bias)  # queries | gate
        self.k_proj = nn.Linear(cfg.hidden_size, KV * D, bias=bias)
        self.v_proj = nn.Linear(cfg.hidden_size, KV * D, bias=bias)
        self.o_proj = nn.Linear(H * D, cfg.hidden_size, bias=bias)
        self.q_norm = nn.RMSNorm(D, eps=cfg.rms_norm_eps)
        self.k_norm = nn.RMSNorm(D, eps=cfg.rms_norm_eps)

    def rope(self, x: mx.array, offset: int) -> mx.array:
        return mx.fast.rope(
            x, self.rope_dims, traditional=False, base=self.rope_theta, scale=1.0, offset=offset
        )

    def __call__(self, x: mx.array, cache: Optional[KVCache] = None) -> mx.array:
        B, L, _ = x.shape
        H, KV = self.num_attention_heads, self.num_key_value_heads
        # Per head, q_proj's rows are [query (head_dim) | gate (head_dim)].
        queries, gate = mx.split(self.q_proj(x).reshape(B, L, H, -1), 2, axis=-1)
        gate = gate.reshape(B, L, -1)
        keys, values = self.k_proj(x), self.v_proj(x)
        queries = self.q_norm(queries).transpose(0, 2, 1, 3)
        keys = self.k_norm(keys.reshape(B, L, KV, -1)).transpose(0, 2, 1, 3)
        values = values.reshape(B, L, KV, -1).transpose(0, 2, 1, 3)

        offset = cache.offset if cache is not None else 0
        queries = self.rope(queries, offset)
        keys = self.rope(keys, offset)
        if cache is not None:
            keys, values = cache.update_and_fetch(keys, values)

        mask = "causal" if L > 1 else None  # bottom-right aligned when offset > 0
        out = mx.fast.scaled_dot_product_attention(
            queries, keys, values, scale=self.scale, mask=mask
        )
        out = out.transpose(0, 2, 1, 3).reshape(B, L, -1)
        return self.o_proj(out * mx.sigmoid(gate))


class DecoderLayer(nn.Module):
    """Pre-norm residual block: token mixer (DeltaNet or attention), then SwiGLU MLP."""

    def __init__(self, cfg: ModelConfig, layer_idx: int):
        super().__init__()
        self.is_linear = cfg.is_linear(layer_idx)
        if self.is_linear:
            self.linear_attn = GatedDeltaNet(cfg)
        else:
            self.self_attn = Attention(cfg)
        self.input_layernorm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.mlp = MLP(cfg.hidden_size, cfg.intermediate_size)

    def mix(self, x: mx.array, cache=None) -> mx.array:
        """The token-mixing branch (its output is added to the residual)."""
        mixer = self.linear_attn if self.is_linear else self.self_attn
        return mixer(self.input_layernorm(x), cache)

    def ffn(self, h: mx.array) -> mx.array:
        """The MLP branch (its output is added to the residual)."""
        return self.mlp(self.post_attention_layernorm(h))

    def __call__(self, x: mx.array, cache=None) -> mx.array:
        h = x + self.mix(x, cache)
        return h + self.ffn(h)


class TextBackbone(nn.Module):
    """Embedding, decoder layers, final norm (mlx-lm's ``Qwen3_5TextModel``)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = [DecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers)]
        self.norm = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    def __call__(self, inputs, cache: Optional[Cache] = None, input_embeddings=None):
        h = self.embed_tokens(inputs) if input_embeddings is None else input_embeddings
        if cache is None:
            cache = [None] * len(self.layers)
        for layer, c in zip(self.layers, cache):
            h = layer(h, c)
        return self.norm(h)


class TextModel(nn.Module):
    """Backbone plus output head (``lm_head`` or the tied embedding)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.config = cfg
        self.model = TextBackbone(cfg)
        if not cfg.tie_word_embeddings:
            self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)

    def logits(self, h: mx.array) -> mx.array:
        if self.config.tie_word_embeddings:
            return self.model.embed_tokens.as_linear(h)
        return self.lm_head(h)

    def __call__(self, inputs, cache=None, input_embeddings=None):
        return self.logits(self.model(inputs, cache, input_embeddings))


# ------------------------------------------------------------------------ model


_NORM_SUFFIXES = (
    ".input_layernorm.weight",
    ".post_attention_layernorm.weight",
    "model.norm.weight",
    ".q_norm.weight",
    ".k_norm.weight",
)


class Model(nn.Module):
    """Qwen3.5 text model: ``model(tokens [B, T] int, cache) -> logits [B, T, vocab]``.

    ``config`` is a :class:`ModelConfig` or a config dict (flat text config or a
    config.json with ``text_config``). Weights are random until loaded
    (``model.load_weights(list(weights.items()))``; see :meth:`sanitize`).
    """

    def __init__(self, config: Union[ModelConfig, dict]):
        super().__init__()
        if isinstance(config, dict):
            config = ModelConfig.from_dict(config)
        self.config = config
        self.language_model = TextModel(config)

    def __call__(
        self,
        inputs: mx.array,
        cache: Optional[Cache] = None,
        input_embeddings: Optional[mx.array] = None,
    ) -> mx.array:
        return self.language_model(inputs, cache, input_embeddings)

    @property
    def layers(self) -> List[DecoderLayer]:
        return self.language_model.model.layers

    def make_cache(self, batch_size: int = 1) -> Cache:
        """One cache per layer; recurrent states start as float32 zeros."""
        c = self.config
        shape = (batch_size, c.linear_num_value_heads, c.linear_value_head_dim, c.linear_key_head_dim)
        return [
            LinearCache(mx.zeros(shape, dtype=mx.float32)) if l.is_linear else KVCache()
            for l in self.layers
        ]

    recurrent_state = staticmethod(recurrent_state)
    set_recurrent_state = staticmethod(set_recurrent_state)

    def linear_layers(self) -> List[int]:
        """Indices of the Gated DeltaNet layers."""
        return [i for i, l in enumerate(self.layers) if l.is_linear]

    def sanitize(self, weights: Dict[str, mx.array]) -> Dict[str, mx.array]:
        """Checkpoint keys/layout -> this model's (same rules as mlx-lm's qwen3_5).

        Prefixes ``model.language_model.`` / none / ``language_model.`` all map to
        ``language_model.``; vision and MTP weights are dropped; a tied model drops
        ``lm_head``. Only if the file is in HF layout (some ``conv1d.weight`` with last
        dim != 1) are conv weights transposed and the zero-centred norms shifted by +1.
        """
        out = {}
        for key, value in weights.items():
            if key.startswith("vision_tower") or key.startswith("model.visual"):
                continue
            if key.startswith("model.language_model"):
                key = key.replace("model.language_model", "language_model.model")
            elif not key.startswith("language_model."):
                key = "language_model." + key
            if "mtp." in key:
                continue
            out[key] = value
        if self.config.tie_word_embeddings:
            out.pop("language_model.lm_head.weight", None)
        hf_layout = any("conv1d.weight" in k and v.shape[-1] != 1 for k, v in out.items())
        for k, v in out.items():
            if "conv1d.weight" in k and v.shape[-1] != 1:
                out[k] = v.moveaxis(2, 1)
            elif hf_layout and v.ndim == 1 and k.endswith(_NORM_SUFFIXES):
                out[k] = v + 1.0
        return out
