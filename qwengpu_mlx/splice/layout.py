"""Where the base model and the circuit live in one Qwen3.5 checkpoint: disjoint dims.

Why disjoint (docs/SPLICE.md has the argument): Qwen3.5's projections have no bias, so
a layer's output on a text token is a function of that token's embedding row alone,
homogeneous in it; a circuit layer that reads any dim a text row fills can be exactly
zero on every text row only if all the base's text rows lie in one open half-space of
the dims it reads, a property of the base no build can guarantee. So the combined
residual is ``4 H`` wide (``H`` the base's hidden size):

* dims ``[0, H)``: the base, its residual stream scaled by 2. RMSNorm takes the mean over
  all ``4 H`` dims, so a text row (zero elsewhere) has the mean ``4 x^2 / 4 H``, the
  base's own; the norm weights are halved, every output projection (and the embedding)
  doubled, the final norm quartered (the tied embedding is doubled too). Every factor
  is a power of two: bit-exact in float32 and bfloat16, quantized scales included.
* dims ``[H, H + C)``: the circuit (``C`` = its folded hidden size, at most ``3 H``);
  its norm weights are ``K / sqrt(4 H)`` there and zero on the base's dims.

Each side reads only its own dims, so on a text token every circuit projection is
exactly 0 (no write, no output: the circuit adds exact zeros) and on a launch token the
base reads only the launch rows' small shared base part (``launch_base_row``) against
the circuit's huge RMS, so what it adds is below 1e-9 of the circuit's units.

Layer order: the base's layers first (a bfloat16 base keeps its own dtype through them),
then the circuit's. The base's layer count is a multiple of ``full_attention_interval``
(24 and 32 are), so each circuit layer keeps the type it was compiled for.
"""

from __future__ import annotations

from dataclasses import dataclass

WIDTH_FACTOR = 4  # combined hidden = 4 x base hidden: the mean of x^2 stays the base's
RESIDUAL_SCALE = 2.0  # sqrt(WIDTH_FACTOR): the base's residual stream is stored doubled


def text_config(config: dict) -> dict:
    """The text part of a Qwen3.5 config.json (mlx-lm reads only ``text_config``)."""
    return dict(config.get("text_config", config))


@dataclass(frozen=True)
class SpliceLayout:
    """Sizes and offsets of one combined checkpoint; ids of its launch tokens."""

    base: dict  # the base's text config
    circuit: dict  # the circuit plan's text config (``CircuitPlan.config()``)
    launch_tokens: int  # size of the circuit's vocabulary

    @property
    def base_hidden(self) -> int:
        return int(self.base["hidden_size"])

    @property
    def hidden(self) -> int:
        return WIDTH_FACTOR * self.base_hidden

    @property
    def circuit_offset(self) -> int:
        return self.base_hidden

    @property
    def circuit_hidden(self) -> int:
        return int(self.circuit["hidden_size"])

    @property
    def base_layers(self) -> int:
        return int(self.base["num_hidden_layers"])

    @property
    def circuit_layers(self) -> int:
        return int(self.circuit["num_hidden_layers"])

    @property
    def base_rows(self) -> int:
        """Embedding rows of the base (its vocab_size; launch ids follow them)."""
        return int(self.base["vocab_size"])

    @property
    def vocab_size(self) -> int:
        return self.base_rows + self.launch_tokens

    def launch_id(self, circuit_id: int) -> int:
        """The combined vocabulary's id of a circuit token."""
        return self.base_rows + circuit_id

    def circuit_id(self, token_id: int) -> int | None:
        """The circuit's id of a combined token id, None for a base (text) token."""
        i = token_id - self.base_rows
        return i if 0 <= i < self.launch_tokens else None

    def value_head(self, circuit_head: int) -> int:
        """The base's value head a circuit head takes: the first of its key head's group.

        mlx-lm repeats each key head for ``Hv / Hk`` value heads (Qwen3.5-4B: 32 on 16),
        so circuit head i uses key head i and value head ``i * Hv / Hk``; the other value
        heads of the group stay all-zero (exactly 0 out)."""
        return circuit_head * (self.base["linear_num_value_heads"] // self.base["linear_num_key_heads"])

    def config(self, base_config: dict) -> dict:
        """The combined config.json: the base's, with the combined text sizes."""
        n = self.base_layers + self.circuit_layers
        sizes = {"hidden_size": self.hidden, "num_hidden_layers": n, "vocab_size": self.vocab_size}
        if "layer_types" in text_config(base_config):  # transformers checks it against the layer count
            interval = int(self.base.get("full_attention_interval", 4))
            sizes["layer_types"] = ["full_attention" if (i + 1) % interval == 0 else "linear_attention"
                                    for i in range(n)]
        out = dict(base_config)
        if "text_config" in out:
            out["text_config"] = {**out["text_config"], **sizes}
        else:
            out.update(sizes)
        return out


def shape_sizes(shape) -> dict:
    """The sizes ``splice_misfits`` reads, from the circuit's target shape (no compile needed)."""
    return {"hidden_size": shape.hidden, "intermediate_size": shape.intermediate,
            "linear_num_value_heads": shape.linear_heads, "linear_key_head_dim": shape.key_dim,
            "linear_value_head_dim": shape.value_dim, "linear_conv_kernel_dim": 4,
            "full_attention_interval": shape.full_attention_interval}


def splice_misfits(base: dict, circuit: dict) -> list[str]:
    """What keeps the circuit (its plan config) from going into the base (text config).

    Empty when it fits. Each entry names the size, what the circuit needs and what the
    base has, so ``build --base`` can refuse before it downloads any weight."""
    out = []

    def need(what: str, ok: bool, wants, has) -> None:
        if not ok:
            out.append(f"{what}: the circuit needs {wants}, the base has {has}")

    H = int(base.get("hidden_size", 0))
    need("residual width", WIDTH_FACTOR * H - H >= circuit["hidden_size"],
         f"{circuit['hidden_size']:,} dims beside the base's (3 x hidden >= that)", f"hidden {H:,}")
    need("MLP width", base.get("intermediate_size", 0) >= circuit["intermediate_size"],
         f"{circuit['intermediate_size']:,} units per layer", f"{base.get('intermediate_size', 0):,}")
    for key in ("linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim",
                "full_attention_interval"):
        need(key, base.get(key) == circuit[key], circuit[key], base.get(key))
    need("linear key heads", base.get("linear_num_key_heads", 0) >= circuit["linear_num_value_heads"],
         f"{circuit['linear_num_value_heads']} (one per circuit head)", base.get("linear_num_key_heads", 0))
    interval = int(base.get("full_attention_interval", 4))
    need("layer count", int(base.get("num_hidden_layers", 0)) % interval == 0,
         f"a multiple of {interval} base layers (so circuit layers keep their types)",
         base.get("num_hidden_layers"))
    need("tied embeddings", bool(base.get("tie_word_embeddings", True)), "tie_word_embeddings true",
         "an untied lm_head")
    return out
