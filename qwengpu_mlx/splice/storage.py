"""Each circuit matrix stored in the smallest standard format that holds it exactly.

Why: the combined residual is ``4 H`` wide (``layout.py``), so the 45 circuit layers
hold about 10 billion parameters at Qwen3.5-2B's width, all but 1.7 million of them
zero. Dense float32 that is 41 GB; what unmodified mlx-lm needs in memory is what is
stored (``sizes.py``). The smallest formats mlx reads are its affine quantizations
(``w = s q + beta`` per group of 32, 64 or 128 inputs, codes of 2, 4 or 8 bits) and the
microscaled ``mxfp4`` / ``mxfp8``:

* an **all-zero group** (codes 0, scale 0, bias 0) costs its bits and nothing else, and
  gives exact zeros, so almost all of a circuit matrix is 2-bit zero groups;
* a **bias-free group** holds values ``s q`` of one sign, ``q < 2^bits``: the circuit's
  levels (a bit's weight, a threshold alone in its group) are of this kind.

Where a layer needs an exact zero, only bias-free groups are written. Why: MLX's Metal
matrix-vector kernel computes a group as ``s * sum(q x) + beta * sum(x)``, so a non-zero
bias cancels against all the group's inputs and leaves a rounding residue where the
dense product gives 0; the circuit needs exact zeros in what its keys, queries and
values read (a key of exact zeros writes nothing), so the mixer's ``in_proj_qkv``, the
MLPs' ``up_proj`` and every output projection (they write what keys read) keep
``beta = 0``; a group there of both signs makes the matrix try ``mxfp4`` and ``mxfp8``
(signed codes, one power-of-two scale per 32, no bias), then bfloat16, then float32.
The matrices read only through thresholds (the MLP gates, the mixer's ``z``, ``b``
and ``a``: a gate decides at margins of many units, far above a rounding residue) may
take a bias where a group spans both signs.

Exactness is not assumed from a format: a matrix takes one only if MLX's own
``mx.dequantize`` (what ``QuantizedLinear`` computes with) gives back its float32
values bit for bit. ``mx.dequantize`` works group by group (a group's values are its
codes, scale and bias), so the check reads every group that holds a non-zero value and
one all-zero group packed as all the others are: at Qwen3.5-2B's width a circuit
matrix is 50-200 million values, nearly all in zero groups, and the whole-matrix check
was most of a build's time on a CPU. A quantized matrix is written as mlx-lm writes one (``weight``
packed, ``scales``, ``biases`` for affine) and unmodified ``mlx_lm.load`` reads each
module's format back from those tensors (``infer_quant_config``): ``config.json``
carries only the ``quantization`` key that tells mlx-lm to look. Only ``Linear``
weights are compacted; norms, the conv and the decay parameters keep their dtype."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np

from qwengpu_mlx.splice.quantized import pack_codes
from qwengpu_mlx.splice.weights import IN_SIDE, OUT_SIDE, layer_index, module_of

GROUP_SIZES = (128, 64, 32)  # mlx's affine group sizes
AFFINE_BITS = (2, 4, 8)  # the widths whose packing is a whole number of values per uint32
SCALE_DTYPES = (mx.bfloat16, mx.float16, mx.float32)  # smallest first
MICROSCALED = (("mxfp4", 4), ("mxfp8", 8))  # signed e2m1 / e4m3 codes, one power-of-two scale per 32
GROUP = 32  # the microscaling formats' only group size
SPLITS = (1, 2, 3, 4)  # a group's grid step: its smallest magnitude over one of these
BIASED = ("gate_proj", "in_proj_z", "in_proj_b", "in_proj_a")  # read through thresholds only (see above)
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
        return any(fmt not in ("bfloat16", "float32") for fmt in self.matrices)

    def summary(self) -> str:
        parts = [f"{fmt} {self.matrices[fmt]} ({self.nbytes[fmt] / 1e9:.3f} GB)"
                 for fmt in sorted(self.matrices, key=lambda f: -self.nbytes[f])]
        return "circuit matrices: " + ", ".join(parts)


def is_linear_weight(name: str) -> bool:
    """A ``Linear`` layer's weight (what ``QuantizedLinear`` can replace)."""
    return name.endswith(".weight") and module_of(name) in IN_SIDE + OUT_SIDE


def affine_name(bits: int, group_size: int, dtype: mx.Dtype) -> str:
    """The tally's name of an affine format, e.g. ``affine2/g128/bfloat16``."""
    return f"affine{bits}/g{group_size}/{str(dtype).split('.')[-1]}"


def affine_bytes(rows: int, cols: int, bits: int, group_size: int, dtype: mx.Dtype) -> int:
    """Bytes of an affine-quantized [rows, cols] matrix: codes, then a scale and a bias per group."""
    return rows * cols * bits // 8 + 2 * rows * (cols // group_size) * dtype.size


def _group_grid(vecs: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scales [n], codes [n, gs], ok [n]): where ``ok``, ``vecs == scales * codes`` exactly
    with codes in ``[0, 2^bits)`` (one sign per group, no bias). The step is the group's
    smallest magnitude over 1..4 (``{2, 3}`` needs a step of 1), the first that works."""
    mag = np.where(vecs != 0, np.abs(vecs), np.inf).min(axis=-1)
    neg = (vecs < 0).any(axis=-1)
    scales = np.zeros(len(vecs), np.float32)
    codes = np.zeros(vecs.shape, np.float32)
    todo = ~((vecs > 0).any(axis=-1) & neg)  # a group of both signs has no bias-free grid
    done = ~(vecs != 0).any(axis=-1)  # all-zero groups: scale 0, codes 0
    todo &= ~done
    for k in SPLITS:
        s = (np.where(neg, -mag, mag) / np.float32(k)).astype(np.float32)
        q = vecs[todo] / s[todo, None]
        ok = np.all((q == np.rint(q)) & (q <= 2 ** bits - 1) & (s[todo, None] * q == vecs[todo]), axis=-1)
        rows = np.flatnonzero(todo)[ok]
        scales[rows], codes[rows] = s[rows], q[ok]
        todo[rows], done[rows] = False, True
    return scales, codes, done


def _biased_grid(vecs: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(scales, biases, codes, ok) with ``vecs == scales * codes + biases`` exactly where
    ``ok``: the bias the group's least value (0 included), the step its least gap above."""
    lo = np.minimum(vecs.min(axis=-1), 0).astype(np.float32)
    above = np.where(vecs > lo[:, None], vecs - lo[:, None], np.inf)
    step = above.min(axis=-1)
    step = np.where(np.isfinite(step), step, 0).astype(np.float32)
    q = np.rint((vecs - lo[:, None]) / np.where(step > 0, step, 1)[:, None])
    ok = np.all((q <= 2 ** bits - 1) & (step[:, None] * q + lo[:, None] == vecs), axis=-1)
    return step, lo, q.astype(np.float32), ok


def _group_forms(vecs: np.ndarray, bits: int, biased: bool):
    """(scales, biases, codes) of ``vecs`` [n, gs] at ``bits``: bias-free where the group
    allows, else (only if ``biased``) with a bias; None if some group fits neither."""
    scales, codes, ok = _group_grid(vecs, bits)
    biases = np.zeros_like(scales)
    if ok.all():
        return scales, biases, codes
    if not biased:
        return None
    sb, bb, qb, okb = _biased_grid(vecs[~ok], bits)
    if not okb.all():
        return None
    rest = np.flatnonzero(~ok)
    scales[rest], biases[rest], codes[rest] = sb, bb, qb
    return scales, biases, codes


def _scale_dtype(*values: np.ndarray) -> mx.Dtype:
    """The smallest dtype that holds every scale and bias exactly (float32 always does)."""
    s = mx.array(np.concatenate([v.ravel() for v in values]).astype(np.float32))
    for dtype in SCALE_DTYPES:
        if mx.array_equal(s.astype(dtype).astype(mx.float32), s).item():
            return dtype
    return mx.float32


@dataclass(frozen=True)
class AffinePlan:
    """A matrix's affine form: its non-zero groups' places, scales, biases and codes."""

    bits: int
    group_size: int
    dtype: mx.Dtype
    where: tuple[np.ndarray, np.ndarray]  # (row, group) of each non-zero group
    scales: np.ndarray
    biases: np.ndarray
    codes: np.ndarray

    def nbytes(self, rows: int, cols: int) -> int:
        return affine_bytes(rows, cols, self.bits, self.group_size, self.dtype)


def _affine_plans(w: np.ndarray, biased: bool) -> list[AffinePlan]:
    """Every affine form of ``w`` (group sizes x bits that hold it); with biases only if
    ``biased``."""
    rows, cols = w.shape
    nonzero32 = (w.reshape(rows, cols // GROUP, GROUP) != 0).any(axis=-1)
    plans = []
    for gs in GROUP_SIZES:
        if cols % gs:
            continue
        where = np.nonzero(nonzero32.reshape(rows, cols // gs, gs // GROUP).any(axis=-1))
        vecs = w.reshape(rows, cols // gs, gs)[where]
        for bits in AFFINE_BITS:
            forms = _group_forms(vecs, bits, biased)
            if forms is not None:
                plans.append(AffinePlan(bits, gs, _scale_dtype(*forms[:2]), where, *forms))
                break  # more bits at this group size only cost more
    return plans


def pack_affine(plan: AffinePlan, rows: int, cols: int) -> tuple[mx.array, mx.array, mx.array]:
    """(weight, scales, biases) as mlx packs them: zero codes, scales and biases everywhere
    but the plan's groups."""
    gs, bits = plan.group_size, plan.bits
    per_group = gs * bits // 32
    packed = np.zeros((rows, cols // gs, per_group), np.uint32)
    if len(plan.codes):
        packed[plan.where] = pack_codes(plan.codes.astype(np.uint32), bits)
    scales, biases = np.zeros((rows, cols // gs), np.float32), np.zeros((rows, cols // gs), np.float32)
    scales[plan.where], biases[plan.where] = plan.scales, plan.biases
    return (mx.array(packed.reshape(rows, -1)), mx.array(scales).astype(plan.dtype),
            mx.array(biases).astype(plan.dtype))


def checked_groups(w: np.ndarray, group_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, group) of the groups the exactness check reads: every group holding a
    non-zero value, and one all-zero group where there is one (it stands for the rest:
    all pack alike, codes 0 and the same scale and bias)."""
    rows, cols = w.shape
    used = (w.reshape(rows, cols // group_size, group_size) != 0).any(axis=-1)
    r, g = np.nonzero(used)
    empty = np.argwhere(~used)[:1]
    return np.concatenate([r, empty[:, 0]]), np.concatenate([g, empty[:, 1]])


def gives_back(w: np.ndarray, packed: mx.array, scales: mx.array, biases: mx.array | None, *, group_size: int,
               bits: int, mode: str = "affine") -> bool:
    """Whether MLX's own ``mx.dequantize`` (float32) gives back ``w`` bit for bit from what
    is written, read group by group (:func:`checked_groups`: a group's values depend on
    its codes, scale and bias alone)."""
    rows, cols = w.shape
    r, g = checked_groups(w, group_size)
    if not len(r):
        return True
    at = (mx.array(r), mx.array(g))
    codes = packed.reshape(rows, cols // group_size, group_size * bits // 32)[at]
    back = mx.dequantize(codes, scales[at][:, None], None if biases is None else biases[at][:, None],
                         group_size=group_size, bits=bits, mode=mode, dtype=mx.float32)
    want = w.reshape(rows, cols // group_size, group_size)[r, g]
    return bool(mx.array_equal(back, mx.array(want)).item())


def _affine(module: str, w: np.ndarray) -> tuple[str, dict[str, mx.array]] | None:
    """The smallest affine form that ``mx.dequantize`` gives back exactly (biases only in
    the modules of ``BIASED``)."""
    if w.ndim != 2 or w.shape[-1] % GROUP:
        return None
    rows, cols = w.shape
    biased = module.rsplit(".", 1)[-1] in BIASED
    for plan in sorted(_affine_plans(w, biased), key=lambda p: p.nbytes(rows, cols)):
        packed, scales, biases = pack_affine(plan, rows, cols)
        if gives_back(w, packed, scales, biases, group_size=plan.group_size, bits=plan.bits):
            return affine_name(plan.bits, plan.group_size, plan.dtype), {
                module + ".weight": packed, module + ".scales": scales, module + ".biases": biases}
    return None


def _zero_group_scale(mode: str, bits: int) -> mx.array:
    """The scale byte mlx writes for an all-zero group (its codes are 0)."""
    return mx.quantize(mx.zeros((1, GROUP)), group_size=GROUP, bits=bits, mode=mode)[1][0, 0]


def _microscaled(module: str, w: np.ndarray) -> tuple[str, dict[str, mx.array]] | None:
    """(format, tensors) of the smallest microscaled format that gives ``w`` back exactly.
    Only the non-zero groups go through ``mx.quantize`` (slow on the CPU at this size);
    the matrix is checked with ``mx.dequantize`` (:func:`gives_back`)."""
    if w.ndim != 2 or w.shape[-1] % GROUP:
        return None
    rows, cols = w.shape
    dense = w.reshape(rows, cols // GROUP, GROUP)
    where = np.nonzero((dense != 0).any(axis=-1))
    vecs = mx.array(dense[where])
    for mode, bits in MICROSCALED:
        packed = np.zeros((rows, cols // GROUP, bits), np.uint32)
        scales = np.full((rows, cols // GROUP), np.array(_zero_group_scale(mode, bits)), np.uint8)
        if len(where[0]):
            p, sc = mx.quantize(vecs, group_size=GROUP, bits=bits, mode=mode)
            packed[where], scales[where] = np.array(p), np.array(sc)[:, 0]
        packed_mx, scales_mx = mx.array(packed.reshape(rows, -1)), mx.array(scales)
        if gives_back(w, packed_mx, scales_mx, None, group_size=GROUP, bits=bits, mode=mode):
            return mode, {module + ".weight": packed_mx, module + ".scales": scales_mx}
    return None


def exact_storage(name: str, w: mx.array) -> tuple[str, dict[str, mx.array]]:
    """(format, tensors to write) for one float32 circuit tensor: the smallest exact one."""
    w = w.astype(mx.float32)
    if is_linear_weight(name):
        module = name[: -len(".weight")]
        dense = np.array(w)  # one host copy for every format tried
        found = _affine(module, dense)
        if found is None:  # a group of both signs, or values no few-bit grid holds
            found = _microscaled(module, dense)
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
