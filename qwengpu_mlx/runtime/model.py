"""The Qwen3.5 text model: mlx-lm's own ``models/qwen3_5.py``, plus what it lacks.

The layers, the forward pass, the config reading, ``sanitize`` and the KV cache are
mlx-lm's (``qwen3_5`` / ``qwen3_next`` / ``cache``), so a checkpoint this project writes is
a standard one that unmodified ``mlx_lm.load`` runs to the same tokens
(``tests/runtime/test_model.py`` checks logits, states and tokens bit for bit on CPU).
What is kept here, each piece saying why mlx-lm's does not serve:

* :class:`ModelConfig`: mlx-lm's ``TextModelArgs`` with refusals for what this runtime
  does not run, nested ``text_config`` reading and :meth:`ModelConfig.is_linear`;
* :class:`OpsGatedDeltaNet`: mlx-lm's layer with the recurrence pinned to the MLX-ops
  reference (exactness);
* :class:`LinearCache`: mlx-lm's ``ArraysCache`` with named views and a token count, and
  :func:`recurrent_state` / :func:`set_recurrent_state` (the circuit's read-out);
* :meth:`Model.make_cache` with a batch size and zero states, :meth:`Model.logits`,
  :func:`layer_mask` and :func:`mix` (a probe reads between a layer's two branches).

Parameter names are mlx-lm's (``language_model.model.layers.{i}.linear_attn...``); the
recurrent state is ``state[b, h, dv, dk]`` float32, mlx-lm's ``ArraysCache[1]``: value head
``h``, row ``dv`` (value dim), column ``dk`` (key dim). A write with one-hot key ``e_j``
updates column ``j``; see :mod:`qwengpu_mlx.runtime.recurrent`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import List, Optional, Union

import mlx.core as mx
from mlx_lm.models import qwen3_5
from mlx_lm.models.base import create_attention_mask, create_ssm_mask
from mlx_lm.models.cache import ArraysCache, KVCache

__all__ = [
    "ModelConfig",
    "Model",
    "LinearCache",
    "KVCache",
    "OpsGatedDeltaNet",
    "layer_mask",
    "mix",
    "recurrent_state",
    "set_recurrent_state",
]


# ------------------------------------------------------------------------ config


@dataclass
class ModelConfig(qwen3_5.TextModelArgs):
    """The Qwen3.5 text config: mlx-lm's ``TextModelArgs`` (its keys, defaults and rope
    reading: a truthy ``rope_parameters`` overrides the flat rope keys), plus:

    * refusals where mlx-lm would run something else than this runtime does (MoE, an
      attention without the output gate, a non-default rope) or would index a layer that
      is not there (fewer layers than ``full_attention_interval``);
    * ``attn_output_gate`` (a Qwen3.5 config key mlx-lm ignores: its attention always gates);
    * the caller's ``rope_parameters`` dict is copied, not rewritten in place;
    * :meth:`from_dict` takes a full config.json (``text_config`` nested) as well.
    """

    model_type: str = "qwen3_5_text"
    attn_output_gate: bool = True

    def __post_init__(self):
        if self.rope_parameters:
            self.rope_parameters = dict(self.rope_parameters)
        super().__post_init__()
        rope = self.rope_parameters
        if rope and rope.get("type", "default") != "default":
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


class LinearCache(ArraysCache):
    """mlx-lm's cache of one Gated DeltaNet layer (``[0]``: conv state, ``[1]``: recurrent
    state), with what the circuit's read-out needs and ``ArraysCache`` lacks: the slots by
    name and ``offset``, the tokens seen (``ArraysCache`` counts only padding).

    ``conv_state``: the last ``K-1`` pre-conv ``qkv`` rows, ``[B, K-1, conv_dim]`` (None
    before the first token); ``recurrent``: the state ``[B, Hv, Dv, Dk]`` float32.
    ``state`` stays ``ArraysCache``'s (what mlx-lm's generator evaluates and saves).
    """

    def __init__(self, state: Optional[mx.array] = None):
        super().__init__(size=2)
        self[1] = state
        self.offset = 0

    @property
    def conv_state(self) -> Optional[mx.array]:
        return self[0]

    @property
    def recurrent(self) -> Optional[mx.array]:
        return self[1]

    def advance(self, N: int) -> None:
        super().advance(N)
        self.offset += N


Cache = List[Union[LinearCache, KVCache]]


def recurrent_state(cache: Cache, layer: int) -> mx.array:
    """The recurrent state of Gated DeltaNet ``layer``: float32 ``[B, Hv, Dv, Dk]``,
    ``state[b, h, dv, dk]`` (row = value dim, column = key dim)."""
    c = cache[layer]
    if not isinstance(c, LinearCache):
        raise ValueError(f"layer {layer} is a full-attention layer (no recurrent state)")
    return c.recurrent


def set_recurrent_state(cache: Cache, layer: int, state: mx.array) -> None:
    """Replace the recurrent state of Gated DeltaNet ``layer`` (float32 [B, Hv, Dv, Dk])."""
    c = cache[layer]
    if not isinstance(c, LinearCache):
        raise ValueError(f"layer {layer} is a full-attention layer (no recurrent state)")
    if c.recurrent is not None and c.recurrent.shape != state.shape:
        raise ValueError(f"state shape {state.shape} != {c.recurrent.shape}")
    c[1] = state.astype(mx.float32)


# ----------------------------------------------------------------------- layers


class OpsGatedDeltaNet(qwen3_5.GatedDeltaNet):
    """mlx-lm's Gated DeltaNet layer (same parameters, same forward), its recurrence pinned
    to the MLX-ops reference.

    Why mlx-lm's does not serve as is: its forward runs its Metal kernel whenever the layer
    is in eval mode (``use_kernel=not self.training``; off Apple silicon it falls back to the
    ops). This model must give the ops' numbers on every device (the circuit's levels are
    exact, and a kernel is admitted only by ``gpu_trust``'s probe, for the circuit runner),
    so ``training``, the one flag that forward reads (the layer has no dropout), is always
    True here; ``Model.eval()`` cannot flip it.
    """

    @property
    def training(self) -> bool:
        return True


def layer_mask(layer, h: mx.array, cache=None):
    """The mask mlx-lm's backbone hands ``layer`` for input ``h`` (``Qwen3_5TextModel``'s rule,
    per layer): for running layers one at a time, which mlx-lm's backbone does not offer."""
    return create_ssm_mask(h, cache) if layer.is_linear else create_attention_mask(h, cache)


def mix(layer, x: mx.array, cache=None) -> mx.array:
    """The token-mixing branch of a decoder ``layer`` (what it adds to the residual).

    mlx-lm's ``DecoderLayer`` adds both branches in one call; the layer probe reads the
    residual between them."""
    mixer = layer.linear_attn if layer.is_linear else layer.self_attn
    return mixer(layer.input_layernorm(x), layer_mask(layer, x, cache), cache)


# ------------------------------------------------------------------------ model


class Model(qwen3_5.Model):
    """mlx-lm's Qwen3.5 model: ``model(tokens [B, T] int, cache) -> logits [B, T, vocab]``.

    ``config`` is a :class:`ModelConfig` or a config dict (flat text config or a config.json
    with ``text_config``), read and checked by :class:`ModelConfig`; the layers and the
    forward are mlx-lm's, the Gated DeltaNet layers :class:`OpsGatedDeltaNet`. Weights are
    random until loaded (``model.load_weights(list(weights.items()))``; see :meth:`sanitize`).
    """

    def __init__(self, config: Union[ModelConfig, dict]):
        if not isinstance(config, ModelConfig):
            config = ModelConfig.from_dict(config)
        super().__init__(qwen3_5.ModelArgs(model_type="qwen3_5", text_config=asdict(config)))
        self.config = config
        for layer in self.layers:
            if layer.is_linear:
                layer.linear_attn.__class__ = OpsGatedDeltaNet  # the same module, the recurrence pinned

    def make_cache(self, batch_size: int = 1) -> Cache:
        """One cache per layer, recurrent states float32 zeros from the start.

        mlx-lm's starts them at None (made at the first token): the circuit's read-out
        and state writes need them, and their batch, before any token runs."""
        c = self.config
        shape = (batch_size, c.linear_num_value_heads, c.linear_value_head_dim, c.linear_key_head_dim)
        return [LinearCache(mx.zeros(shape, dtype=mx.float32)) if l.is_linear else KVCache() for l in self.layers]

    recurrent_state = staticmethod(recurrent_state)
    set_recurrent_state = staticmethod(set_recurrent_state)

    def linear_layers(self) -> List[int]:
        """Indices of the Gated DeltaNet layers."""
        return [i for i, l in enumerate(self.layers) if l.is_linear]

    def logits(self, h: mx.array) -> mx.array:
        """The output head on final-normed ``h`` (``lm_head`` or the tied embedding): mlx-lm
        applies it only inside the forward; the layer probe applies it to its own residual."""
        lm = self.language_model
        if self.config.tie_word_embeddings:
            return lm.model.embed_tokens.as_linear(h)
        return lm.lm_head(h)

    def sanitize(self, weights):
        """mlx-lm's ``sanitize`` (prefixes, vision and MTP weights dropped, HF layout
        converted), and a tied model's ``lm_head`` dropped: mlx-lm pops it by its unprefixed
        name after prefixing, so a tied file carrying one would fail a strict load."""
        out = super().sanitize(weights)
        if self.config.tie_word_embeddings:
            out.pop("language_model.lm_head.weight", None)
        return out
