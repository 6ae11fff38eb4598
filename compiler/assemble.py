"""Assemble layer builders into a standard Qwen3.5 checkpoint (config + weights).

A :class:`CircuitPlan` is the list of decoder layers, each with an optional mixer
(:class:`DeltaNetBuilder`; None makes the mixer inert) and an optional MLP
(:class:`MLPBuilder`), plus the token embedding table. Layers whose index the
Qwen3.5 pattern makes full attention get an inert attention (zero output projection);
asking for a DeltaNet there is an error, so the plan must route around those indices.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import mlx.core as mx
import numpy as np

from qwengpu_mlx.compiler.deltanet import DeltaNetBuilder
from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS, Levels
from qwengpu_mlx.compiler.mlp import MLPBuilder
from qwengpu_mlx.compiler.placement import placing
from qwengpu_mlx.compiler.residual import ResidualLayout


@dataclass
class Shape:
    """Target model shape (the narrow native one by default)."""

    hidden: int = 512
    intermediate: int = 2048
    linear_heads: int = 8
    key_dim: int = 64
    value_dim: int = 64
    attn_heads: int = 2
    kv_heads: int = 1
    head_dim: int = 64
    full_attention_interval: int = 4

    def is_linear(self, layer: int) -> bool:
        return (layer + 1) % self.full_attention_interval != 0


@dataclass
class LayerPlan:
    mixer: DeltaNetBuilder | None = None
    mlp: MLPBuilder | None = None
    role: str = ""
    # which stage placed what here, (stage, "gate" | "head") -> count, and of the parts the
    # schedule moved here the stages that built them (``compiler.placement``)
    placed: Counter = field(default_factory=Counter)
    moved_in: Counter = field(default_factory=Counter)


@dataclass
class CircuitPlan:
    shape: Shape
    layout: ResidualLayout
    levels: Levels = DEFAULT_LEVELS
    layers: list[LayerPlan] = field(default_factory=list)
    vocab: list[str] = field(default_factory=list)
    embedding: np.ndarray | None = None  # [vocab, hidden]
    embedding_sparse: tuple | None = None  # (dims, [vocab, len(dims)]): the same, compact
    final_norm_dims: list | None = None  # dims the final norm passes (None: all)
    finalized: bool = False
    origins: dict = field(default_factory=dict)  # (kind, name) -> placement.Origin: the stage that placed it

    def finalize(self) -> None:
        """Make every decision independent of the signal ratio, before any weights exist.

        Writes the class constants ONE1 (a layer-0 head) and ONE2 (a layer-0 MLP gate);
        heads above layer 0 take their output gate z from ONE1, so what they write scales
        like an MLP output (class 2); gates above layer 0 read class-2 copies of token and
        layer-0 head bits. Called by ``weights`` and ``compact``; idempotent.
        """
        if self.finalized:
            return
        with placing(self, "finalize"):
            self._finalize()
        self.finalized = True

    def _finalize(self) -> None:
        lay, K = self.layout, self.levels.K
        self.mlp(0).gate("ONE2", [], 0, [(lay.ONE2, 1)])
        lay.references = {2: (lay.ONE2, 1.0)}
        m0 = self.mixer(0)
        if len(m0.heads) < m0.H:
            h = m0.head("ONE1", 1, 1)
            h.key(0, lay.ONE, weight=1.0 / K)
            h.value_terms.append((0, lay.ONE, 3, 1.0 / K))
            h.query(0, lay.ONE, 1.0 / K)
            h.read_bit(0, lay.ONE1)
            lay.references[1] = (lay.ONE1, 1.0)
            for lp in self.layers[1:]:
                if lp.mixer is not None:
                    lp.mixer.z_ref = lay.references[1]
        self._record_classes()
        self._reclass_gate_inputs()
        self._record_classes()

    def _record_classes(self) -> None:
        """Each dim's scale class, from what writes it (``ResidualLayout.scale_class``)."""
        lay = self.layout
        cls = lay.scale_class
        cls.clear()
        cls.update({int(d): 0 for d in self.embedding_dims()})
        for lp in self.layers:
            if lp.mixer is not None:
                cls.update({int(d): (2 if lp.mixer.z_ref[0] == lay.ONE1 else 1) for d in lp.mixer.output_dims()})
            if lp.mlp is not None:
                cls.update({int(d): 2 for d in lp.mlp.used_outputs()})

    def embedding_dims(self) -> np.ndarray:
        """Residual dims some token embedding writes."""
        if self.embedding_sparse is not None:
            return np.asarray(self.embedding_sparse[0], dtype=np.int64)
        if self.embedding is not None:
            return np.nonzero(np.any(self.embedding != 0, axis=0))[0]
        return np.zeros(0, dtype=np.int64)

    def _reclass_gate_inputs(self) -> None:
        """Gates above layer 0 read class-2 copies of token bits and layer-0 head bits.

        So do the keys and queries of heads above layer 0 that decode them with their
        SiLU (``MachineCircuit.decoded_query``): those are thresholds too.

        Layer 0's MLP copies each such bit with a one-input gate (exact: its threshold is
        written against the bit's own class constant), so every gate above it sees inputs
        of one class only and its decision does not depend on the signal ratio.
        """
        lay, cls = self.layout, self.layout.scale_class
        name_of = lay.dim_names()
        m0 = self.mlp(0)
        copies: dict[int, int] = {}

        def copy_of(d: int) -> int:
            if d == lay.ONE or d not in cls or cls[d] == 2:
                return d
            if d not in copies:
                copies[d] = lay.alloc(f"class2.{name_of[d]}", 1)[0]
                m0.gate(f"class2.{name_of[d]}", [(d, 1)], 1, [(copies[d], 1)])
            return copies[d]

        for lp in self.layers[1:]:
            if lp.mlp is None:
                continue
            gates = [replace(g, terms=tuple((copy_of(d), w) for d, w in g.terms)) for g in lp.mlp.gates]
            lp.mlp.gates = gates
        for lp in self.layers[1:]:  # heads that decode keys or queries with their SiLU
            for h in (lp.mixer.heads if lp.mixer is not None else []):
                if any(d == lay.ONE2 for _, d, _ in h.query_terms):
                    h.query_terms = [(r, copy_of(d), w) for r, d, w in h.query_terms]
                if any(d == lay.ONE2 for _, d, _, _ in h.key_terms):
                    h.key_terms = [(r, copy_of(d), tap, w) for r, d, tap, w in h.key_terms]

    def new_layer(self, role: str = "") -> int:
        self.layers.append(LayerPlan(role=role))
        return len(self.layers) - 1

    def mixer(self, layer: int, name: str = "") -> DeltaNetBuilder:
        if not self.shape.is_linear(layer):
            raise ValueError(f"layer {layer} is a full-attention layer in the Qwen3.5 pattern; "
                             f"it cannot hold a DeltaNet memory")
        while len(self.layers) <= layer:
            self.new_layer()
        lp = self.layers[layer]
        if lp.mixer is None:
            s = self.shape
            lp.mixer = DeltaNetBuilder(self.layout, heads=s.linear_heads, key_dim=s.key_dim,
                                       value_dim=s.value_dim, levels=self.levels,
                                       name=name or f"layer{layer}.mixer")
        return lp.mixer

    def mlp(self, layer: int, name: str = "") -> MLPBuilder:
        while len(self.layers) <= layer:
            self.new_layer()
        lp = self.layers[layer]
        if lp.mlp is None:
            lp.mlp = MLPBuilder(self.layout, self.shape.intermediate, self.levels,
                                name=name or f"layer{layer}.mlp")
        return lp.mlp

    def config(self) -> dict:
        s = self.shape
        return {
            "model_type": "qwen3_5_text",
            "hidden_size": s.hidden,
            "intermediate_size": s.intermediate,
            "num_hidden_layers": len(self.layers),
            "num_attention_heads": s.attn_heads,
            "num_key_value_heads": s.kv_heads,
            "head_dim": s.head_dim,
            "rms_norm_eps": 1e-6,
            "vocab_size": len(self.vocab),
            "max_position_embeddings": 1 << 20,
            "linear_num_key_heads": s.linear_heads,
            "linear_num_value_heads": s.linear_heads,
            "linear_key_head_dim": s.key_dim,
            "linear_value_head_dim": s.value_dim,
            "linear_conv_kernel_dim": 4,
            "full_attention_interval": s.full_attention_interval,
            "tie_word_embeddings": True,
            "attn_output_gate": True,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10_000_000.0,
                                "partial_rotary_factor": 0.25},
        }

    def weights(self) -> dict[str, mx.array]:
        """Every parameter of the dense checkpoint, by its mlx-lm name."""
        out: dict[str, mx.array] = {}
        for part in self.weight_shards():
            out.update(part)
        return out

    def weight_shards(self):
        """The same parameters one part at a time: the embedding and final norm, then each
        layer's. A 2B-shaped checkpoint is gigabytes; ``save_checkpoint`` writes the parts
        as shards, so only one layer is ever dense in memory."""
        self.finalize()
        s, L = self.shape, self.levels
        if len(self.layers) < s.full_attention_interval:
            raise ValueError(f"mlx-lm needs at least {s.full_attention_interval} layers "
                             f"(num_hidden_layers < full_attention_interval raises there)")
        embedding = self.embedding
        if embedding is None and self.embedding_sparse is not None:
            dims, Es = self.embedding_sparse
            embedding = np.zeros((len(self.vocab), s.hidden), np.float32)
            embedding[:, dims] = Es
        if embedding is None or embedding.shape != (len(self.vocab), s.hidden):
            raise ValueError("embedding table missing or of the wrong shape")
        H = s.hidden
        nw = np.full((H,), L.norm_weight(H), np.float32)
        pre = "language_model.model."
        fnw = nw
        if self.final_norm_dims is not None:
            fnw = np.zeros((H,), np.float32)
            fnw[np.asarray(self.final_norm_dims, dtype=np.int64)] = L.norm_weight(H)
        yield {pre + "embed_tokens.weight": mx.array(embedding.astype(np.float32)), pre + "norm.weight": mx.array(fnw)}
        for i, lp in enumerate(self.layers):
            p = f"{pre}layers.{i}."
            out: dict[str, np.ndarray] = {p + "input_layernorm.weight": nw, p + "post_attention_layernorm.weight": nw}
            if s.is_linear(i):
                mixer = lp.mixer or DeltaNetBuilder(self.layout, heads=s.linear_heads, key_dim=s.key_dim,
                                                    value_dim=s.value_dim, levels=L)
                for k, v in mixer.weights(H).items():
                    out[p + "linear_attn." + k] = v
            else:
                D, Hq, KV = s.head_dim, s.attn_heads, s.kv_heads
                out[p + "self_attn.q_proj.weight"] = np.zeros((2 * Hq * D, H), np.float32)
                out[p + "self_attn.k_proj.weight"] = np.zeros((KV * D, H), np.float32)
                out[p + "self_attn.v_proj.weight"] = np.zeros((KV * D, H), np.float32)
                out[p + "self_attn.o_proj.weight"] = np.zeros((H, Hq * D), np.float32)
                out[p + "self_attn.q_norm.weight"] = np.ones((D,), np.float32)
                out[p + "self_attn.k_norm.weight"] = np.ones((D,), np.float32)
            mlp = lp.mlp or MLPBuilder(self.layout, s.intermediate, L)
            g, u, d = mlp.weights(H)
            out[p + "mlp.gate_proj.weight"] = g
            out[p + "mlp.up_proj.weight"] = u
            out[p + "mlp.down_proj.weight"] = d
            yield {k: mx.array(v) for k, v in out.items()}

    def usage(self) -> list[dict]:
        """Per layer: residual dims, heads and MLP units actually used (for sparse execution)."""
        rows = []
        for i, lp in enumerate(self.layers):
            rows.append({
                "layer": i,
                "role": lp.role,
                "kind": "linear" if self.shape.is_linear(i) else "attention (inert)",
                "heads": [h.name for h in lp.mixer.heads] if lp.mixer else [],
                "mlp_units": lp.mlp.units if lp.mlp else 0,
                "mlp_inputs": int(len(lp.mlp.used_inputs())) if lp.mlp else 0,
            })
        return rows
