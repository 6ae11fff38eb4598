"""Our runner for a combined checkpoint: the base through mlx-lm's own model, the circuit compact.

The combined model computes each position on one side only (``layout.py``): on a text
token every circuit layer adds exact zeros, so the base's own model (its tensors
sliced out of the combined ones and unscaled: powers of two, exact) gives the text
logits, and every launch token's logit there is the shared row ``b`` times the base's
final state. On a launch token the base's layers read the launch rows' shared part
against the circuit's RMS, and what they add stays below 1e-9 of the circuit's units
(:func:`launch_rms_share` is the condition, checked at load), so the compact circuit
runner gives the launch. ``tests/splice/test_combined.py`` checks both sides against unmodified
mlx-lm on the dense checkpoint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx_lm.models.qwen3_5 import Model, ModelArgs
from mlx_lm.utils import infer_quant_config

from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS
from qwengpu_mlx.core.machine import MACHINES

from qwengpu_mlx.splice.build import SPLICE_RECORD, recorded_config
from qwengpu_mlx.splice.folded import folded_circuit
from qwengpu_mlx.splice.layout import RESIDUAL_SCALE, SpliceLayout
from qwengpu_mlx.splice.logits import combined_text_logits, final_hidden
from qwengpu_mlx.splice.quantized import affine_format, halve
from qwengpu_mlx.splice.weights import PREFIX, layer_index, module_path, split_layers, tensor_role

MAX_RMS_SHARE = 2.0 ** -30  # |launch rows' base part|^2 / K^2: moves the RMS by < 2^-31, below float32's 2^-24


def launch_rms_share(launch_row: np.ndarray) -> float:
    """The launch rows' base part's share of a launch token's squared norm (ONE = K dominates)."""
    return float(np.sum((RESIDUAL_SCALE * launch_row.astype(np.float64)) ** 2)) / DEFAULT_LEVELS.K ** 2


def base_model_from_config(text_cfg: dict):
    """An mlx-lm Qwen3.5 model object for the base's text config (weights not loaded)."""
    full = {"model_type": "qwen3_5", "text_config": text_cfg,
            "tie_word_embeddings": text_cfg.get("tie_word_embeddings", True)}
    return Model(ModelArgs.from_dict(full))


def _unsplice_layer(params: dict[str, mx.array], H: int, factor: int) -> dict[str, mx.array]:
    """A base layer's own tensors from its combined ones (slice the base's dims, undo x2; a
    quantized module's codes and scales sliced by the same factor, its scales halved)."""
    out = {}
    for name, w in params.items():
        role, packed = tensor_role(name), module_path(name) + ".scales" in params
        if role == "norm":
            out[name] = w[:H] * RESIDUAL_SCALE
        elif role == "in":
            out[name] = w[:, : w.shape[-1] // factor] if packed else w[:, :H]
        elif role == "out":
            out[name] = halve(name, w[:H]) if packed else w[:H] / RESIDUAL_SCALE
        else:
            out[name] = w
    return out


def _unsplice_embedding(top: dict[str, mx.array], lay: SpliceLayout) -> tuple[dict[str, mx.array], np.ndarray]:
    """(the base's embedding tensors, the launch rows' shared part b as the checkpoint holds it)."""
    m, H, n = PREFIX + "embed_tokens", lay.base_hidden, lay.base_rows
    E = top[m + ".weight"]
    if m + ".scales" not in top:
        return {m + ".weight": E[:n, :H] / RESIDUAL_SCALE}, np.array(E[n, :H].astype(mx.float32)) / RESIDUAL_SCALE
    factor = lay.hidden // H
    keys = (".weight", ".scales", ".biases")
    parts = {m + k: top[m + k][:, : top[m + k].shape[-1] // factor] for k in keys}
    gs, bits = affine_format(*(parts[m + k] for k in keys), H, "the embedding")
    row = mx.dequantize(*(parts[m + k][n: n + 1] for k in keys), group_size=gs, bits=bits)
    base = {k: v[:n] if k.endswith(".weight") else halve(k, v[:n]) for k, v in parts.items()}
    return base, np.array(row[0].astype(mx.float32)) / RESIDUAL_SCALE


def unsplice_base(weights: dict[str, mx.array], lay: SpliceLayout) -> tuple[dict[str, mx.array], np.ndarray]:
    """(the base's own tensors, the launch rows' shared base part b) from combined tensors."""
    H = lay.base_hidden
    top, layers = split_layers(weights)
    base, row = _unsplice_embedding(top, lay)
    base[PREFIX + "norm.weight"] = top[PREFIX + "norm.weight"][:H] * (RESIDUAL_SCALE * RESIDUAL_SCALE)
    for i in range(lay.base_layers):
        base.update({f"{PREFIX}layers.{i}.{k}": v for k, v in _unsplice_layer(layers[i], H, lay.hidden // H).items()})
    return base, row


def quantize_like(model, weights: dict[str, mx.array]) -> None:
    """Make ``model``'s layers quantized wherever ``weights`` holds scales, each in its own
    format, as ``mlx_lm.load`` does (its ``infer_quant_config``)."""
    def predicate(path, module):
        if not hasattr(module, "to_quantized") or f"{path}.scales" not in weights:
            return False
        return infer_quant_config(path, module, weights)

    nn.quantize(model, class_predicate=predicate)


def _load_base_tensors(path: Path, lay: SpliceLayout) -> dict[str, mx.array]:
    """The combined tensors the base part needs (embedding, final norm, base layers), lazily."""
    keep = {PREFIX + "embed_tokens" + k for k in (".weight", ".scales", ".biases")} | {PREFIX + "norm.weight"}
    out = {}
    for f in sorted(path.glob("model*.safetensors")):
        for k, v in mx.load(str(f)).items():
            i = layer_index(k)
            if k in keep or (i is not None and i < lay.base_layers):
                out[k] = v
    return out


@dataclass
class CombinedModel:
    """A combined checkpoint as our runner holds it: base model, shared row, circuit runner."""

    base: object  # mlx-lm Qwen3.5 model of the base, unmodified
    layout: SpliceLayout
    launch_row: np.ndarray  # b [H]: every launch row's part in the base's dims (base units)
    circuit: object  # a runtime Runner over the circuit (circuit token ids)

    def text_logits(self, tokens: list[int]) -> mx.array:
        """The combined model's logits [T, V] at text positions: the base's, then the launch
        tokens' (all equal to ``b . h``)."""
        return combined_text_logits(self.base, final_hidden(self.base, tokens), self.launch_row,
                                    self.layout.launch_tokens)

    def launch_ids(self, circuit_ids: list[int]) -> list[int]:
        """Circuit token ids as the combined vocabulary's."""
        return [self.layout.launch_id(t) for t in circuit_ids]


def combine(base, layout: SpliceLayout, circuit, launch_row: np.ndarray | None = None) -> CombinedModel:
    """The one place a :class:`CombinedModel` is assembled: ``base`` (an mlx-lm Qwen3.5 model),
    the splice ``layout``, ``circuit`` (a runtime Runner over the circuit, or None) and
    ``launch_row`` (the launch rows' shared part in the base's dims; None: zeros, as a base
    combined in memory has no dense export whose text it would keep launch tokens out of)."""
    if launch_row is None:
        launch_row = np.zeros((layout.base_hidden,), np.float32)
    return CombinedModel(base, layout, launch_row, circuit)


class CombinedCheckpointError(ValueError):
    """A directory that is not a usable combined checkpoint (record missing, unreadable, or
    from another circuit); the message says which and what to do."""


def read_record(path: Path) -> tuple[str, SpliceLayout]:
    """(machine name, splice layout) from a combined checkpoint's splice record."""
    f = Path(path) / SPLICE_RECORD
    if not f.is_file():
        raise CombinedCheckpointError(f"{path}: not a combined checkpoint (no {SPLICE_RECORD}; "
                                      f"`qwengpu-mlx build --base` writes one)")
    try:
        rec = json.loads(f.read_text())
        layout = SpliceLayout(rec["base_text_config"], rec["circuit_config"], int(rec["launch_tokens"]))
        machine = rec["machine"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CombinedCheckpointError(f"{f}: unreadable splice record ({type(e).__name__}: {e}); rebuild with "
                                      f"`qwengpu-mlx build --base`") from None
    return machine, layout


def recorded_machine(path: Path):
    """(the machine a combined checkpoint's circuit runs, its splice layout)."""
    return _machine(*read_record(path), path)


def _machine(name: str, layout: SpliceLayout, path: Path):
    """The recorded machine (``build.recorded_config``: an old ``default`` is the published one)."""
    machine = recorded_config(name)
    if machine is None:
        raise CombinedCheckpointError(f"{path}: records machine {name!r}, which this version does not have "
                                      f"({', '.join(sorted(MACHINES))})")
    return machine, layout


def read_layout(path: Path) -> SpliceLayout:
    """The splice layout a combined checkpoint records."""
    return read_record(path)[1]


def load_combined(path: Path, circuit) -> CombinedModel:
    """Our runner over the combined checkpoint at ``path``, with ``circuit`` (a Runner over the
    circuit the manifest names) for launches."""
    path = Path(path)
    lay = read_layout(path)
    weights, row = unsplice_base(_load_base_tensors(path, lay), lay)
    share = launch_rms_share(row)
    if share > MAX_RMS_SHARE:
        raise CombinedCheckpointError(f"the launch rows' base part holds {share:.2e} of a launch token's norm "
                         f"(at most {MAX_RMS_SHARE:.1e} keeps the circuit's levels exact)")
    model = base_model_from_config(lay.base)
    quantize_like(model, weights)
    model.load_weights(list(weights.items()), strict=True)
    mx.eval(model.parameters())
    return combine(model, lay, circuit, row)


def checkpoint_circuit(path: Path, store):
    """A runner over the circuit a combined checkpoint holds: the recorded machine's circuit at
    Qwen3.5-2B's shape from ``store`` (compiled, or the same weights the checkpoint holds)."""
    name, lay = read_record(path)
    machine, _ = _machine(name, lay, path)
    folded = folded_circuit(store, machine)
    if folded.config != lay.circuit:
        raise CombinedCheckpointError(f"{path} holds a different circuit than this version compiles for the "
                                      f"{name} machine: rebuild it with `qwengpu-mlx build --base`")
    return store.runner_over(folded.compact, machine)


def open_combined(path: Path, store) -> CombinedModel:
    """Our runner over a checkpoint ``build --base`` wrote (its circuit: :func:`checkpoint_circuit`)."""
    return load_combined(path, checkpoint_circuit(path, store))
