"""Each circuit matrix stored in the smallest standard format that holds it exactly.

Why: the combined residual is ``4 H`` wide (``layout.py``), so the 45 circuit layers
hold about 10 billion parameters at Qwen3.5-2B's width, almost all zero. Stored dense
in float32 that is 42 GB. Most of those matrices are small multiples of powers of two,
which MLX's microscaling formats hold exactly: ``mxfp4`` (an e2m1 value per weight and
one power-of-two scale per 32 weights, 0.53 bytes a weight) and ``mxfp8`` (e4m3, 1.03
bytes). The rest go to bfloat16 where every value is a bfloat16 (the float32
activations promote it back exactly), else stay float32.

Exactness is not assumed from the format: a matrix takes a format only if MLX's own
``mx.dequantize`` (what ``QuantizedLinear`` computes with) gives back its float32
values bit for bit. A quantized matrix is written as mlx-lm writes one
(``weight`` packed, ``scales``), and unmodified ``mlx_lm.load`` reads its format back
from the scales (``infer_quant_config``): no per-layer entries in ``config.json``, only
the ``quantization`` key that tells mlx-lm to look. Only ``Linear`` weights are
compacted; norms, the conv and the decay parameters keep their dtype (their ops do not
promote the way a product does)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import mlx.core as mx

from .weights import IN_SIDE, OUT_SIDE, layer_index, module_of

GROUP = 32  # the microscaling formats' only group size
MICROSCALED = (("mxfp4", 4), ("mxfp8", 8))  # smallest first
DEFAULT_QUANTIZATION = {"group_size": GROUP, "bits": 4, "mode": "mxfp4"}  # mlx-lm reads each module's own


@dataclass
class StorageTally:
    """How many matrices and parameters went to each format, and the bytes written."""

    matrices: Counter = field(default_factory=Counter)
    parameters: Counter = field(default_factory=Counter)
    nbytes: Counter = field(default_factory=Counter)

    def add(self, fmt: str, parameters: int, tensors: dict[str, mx.array]) -> None:
        self.matrices[fmt] += 1
        self.parameters[fmt] += parameters
        self.nbytes[fmt] += sum(t.nbytes for t in tensors.values())

    @property
    def quantized(self) -> bool:
        return any(self.matrices[m] for m, _ in MICROSCALED)

    def summary(self) -> str:
        parts = [f"{fmt} {self.matrices[fmt]} ({self.nbytes[fmt] / 1e9:.2f} GB)" for fmt in
                 ("mxfp4", "mxfp8", "bfloat16", "float32") if self.matrices[fmt]]
        return "circuit matrices: " + ", ".join(parts)


def is_linear_weight(name: str) -> bool:
    """A ``Linear`` layer's weight (what ``QuantizedLinear`` can replace)."""
    return name.endswith(".weight") and module_of(name) in IN_SIDE + OUT_SIDE


def _microscaled(name: str, w: mx.array) -> tuple[str, dict[str, mx.array]] | None:
    """(format, tensors) of the smallest microscaled format that gives ``w`` back exactly."""
    if w.ndim != 2 or w.shape[-1] % GROUP:
        return None
    module = name[: -len(".weight")]
    for mode, bits in MICROSCALED:
        packed, scales = mx.quantize(w, group_size=GROUP, bits=bits, mode=mode)
        back = mx.dequantize(packed, scales, group_size=GROUP, bits=bits, mode=mode, dtype=mx.float32)
        if mx.array_equal(back, w).item():
            return mode, {module + ".weight": packed, module + ".scales": scales}
    return None


def exact_storage(name: str, w: mx.array) -> tuple[str, dict[str, mx.array]]:
    """(format, tensors to write) for one float32 circuit tensor: the smallest exact one."""
    w = w.astype(mx.float32)
    if is_linear_weight(name):
        found = _microscaled(name, w)
        if found is not None:
            return found
        if mx.array_equal(w.astype(mx.bfloat16).astype(mx.float32), w).item():
            return "bfloat16", {name: w.astype(mx.bfloat16)}
    return "float32", {name: w}


def compact_layer(tensors: dict[str, mx.array], tally: StorageTally) -> dict[str, mx.array]:
    """A circuit layer's tensors (full names) with each matrix in its smallest exact format."""
    out = {}
    for name, w in tensors.items():
        fmt, stored = exact_storage(name, w)
        if is_linear_weight(name):
            tally.add(fmt, w.size, stored)
        out.update(stored)
    return out


def _in_circuit(name: str, first_circuit_layer: int) -> bool:
    i = layer_index(name)
    return i is not None and i >= first_circuit_layer


def compact_circuit(shards, first_circuit_layer: int, tally: StorageTally):
    """The combined shards with every circuit layer's matrices compacted (base tensors as
    they are: they hold the base's own values, which no smaller format holds)."""
    for part in shards:
        circuit = {k: v for k, v in part.items() if _in_circuit(k, first_circuit_layer)}
        if circuit:
            part = {**{k: v for k, v in part.items() if k not in circuit}, **compact_layer(circuit, tally)}
        yield part


def quantization_entry(base_config: dict, tally: StorageTally) -> dict:
    """The ``quantization`` key the combined config.json needs ({} when none is needed): the
    base's own if it is quantized (its per-module entries name base layers only), else a
    default that only makes mlx-lm look for ``scales`` (each module's format is its own)."""
    own = base_config.get("quantization") or base_config.get("text_config", {}).get("quantization")
    if own:
        return {"quantization": own}
    return {"quantization": dict(DEFAULT_QUANTIZATION)} if tally.quantized else {}
