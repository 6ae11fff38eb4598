"""An affine-quantized base (mlx-community's 4-bit and 8-bit conversions) in the combined width.

A quantized matrix is ``weight`` (codes ``q`` packed into uint32), ``scales`` ``s`` and
``biases`` ``beta``, one pair per ``group_size`` inputs: ``w = s q + beta``. The splice
changes only its layout and powers of two, so the base's values stay its own:

* **zero groups** for the circuit's dims: codes 0, scale 0, bias 0 give exact zeros, so
  an input projection gets zero packed columns and zero scale and bias columns, an
  output projection zero rows;
* **doubling** (output projections, the embedding's base rows): ``2 s q + 2 beta`` is
  ``2 w`` exactly, so scales and biases double and the codes stay;
* **launch rows** of a quantized embedding: each group of the circuit's part holds at
  most a few distinct levels (the machine's ``-1, 0, 1`` bits and its ``ONE``), packed
  with a scale and bias chosen for that group (:func:`pack_exact`) and checked with
  ``mx.dequantize`` bit for bit; the part every launch row shares in the base's dims
  (``logits.py``) needs no exact value, so it is quantized as mlx quantizes.

Only the affine mode is spliced: the microscaled modes (``mxfp4`` and the like) keep no
bias, and a group holding both ``ONE`` and a unit bit spans more than their exponent
range."""

from __future__ import annotations

import mlx.core as mx
import numpy as np


class QuantizedBaseError(ValueError):
    """A quantized base the splice cannot widen exactly; the message names what and why."""


def is_quantized(params: dict[str, mx.array]) -> bool:
    return any(k.endswith(".scales") for k in params)


def check_affine(scales: mx.array, biases: mx.array | None, what: str) -> None:
    """:class:`QuantizedBaseError` unless ``what`` is affine-quantized (microscaled modes keep
    uint8 scales and no biases)."""
    if scales.dtype == mx.uint8 or biases is None:
        raise QuantizedBaseError(f"{what} is quantized in a microscaled mode; only affine-quantized bases "
                                 f"(mlx-community's 4-bit and 8-bit conversions) are spliced")


def affine_format(packed: mx.array, scales: mx.array, biases: mx.array | None, in_dims: int,
                  what: str) -> tuple[int, int]:
    """(group_size, bits) of an affine-quantized matrix of ``in_dims`` inputs (mlx-lm's own
    inference), or :class:`QuantizedBaseError` if it is not affine."""
    check_affine(scales, biases, what)
    return in_dims // scales.shape[-1], packed.shape[-1] * 32 // in_dims


def double(name: str, w: mx.array) -> mx.array:
    """A quantized tensor of a matrix times 2: scales and biases double, codes stay."""
    return w if name.endswith(".weight") else w * 2


def halve(name: str, w: mx.array) -> mx.array:
    """The inverse of :func:`double` (exact: powers of two)."""
    return w if name.endswith(".weight") else w / 2


def pack_codes(codes: np.ndarray, bits: int) -> np.ndarray:
    """[rows, n] codes < 2^bits -> [rows, n bits / 32] uint32, value j of a word at bits j*bits
    (MLX's affine layout for 2, 4 and 8 bits)."""
    if bits not in (2, 4, 8):
        raise QuantizedBaseError(f"a {bits}-bit embedding is not spliced (2, 4 and 8 bits are)")
    per = 32 // bits
    c = codes.astype(np.uint32).reshape(codes.shape[0], -1, per)
    return np.bitwise_or.reduce(c << (bits * np.arange(per, dtype=np.uint32)), axis=-1).astype(np.uint32)


def _group_affine(groups: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes, scales, biases) that hold ``groups`` [rows, G, gs] on a grid ``beta + s k``:
    beta the group's least value, s its least positive step above it. Codes of values
    off the grid (or past ``2^bits - 1``) come out wrong and are caught by the caller's
    bit-for-bit check."""
    lo = groups.min(axis=-1)
    above = np.where(groups > lo[..., None], groups - lo[..., None], np.inf)
    step = above.min(axis=-1)
    step = np.where(np.isfinite(step), step, 0.0)
    safe = np.where(step > 0, step, 1.0)
    codes = np.rint((groups - lo[..., None]) / safe[..., None])
    codes = np.clip(codes, 0, 2 ** bits - 1)
    return codes, step, lo


def pack_exact(rows: np.ndarray, group_size: int, bits: int, dtype) -> tuple[mx.array, mx.array, mx.array]:
    """Affine-quantized (weight, scales, biases) of ``rows`` [n, d] that dequantize to
    ``rows`` (cast to ``dtype``) bit for bit, or :class:`QuantizedBaseError` naming the
    rows that no group scale and bias hold exactly."""
    want = mx.array(rows.astype(np.float32)).astype(dtype)
    g = np.array(want.astype(mx.float32)).reshape(rows.shape[0], -1, group_size)
    codes, step, lo = _group_affine(g, bits)
    packed = mx.array(pack_codes(codes.reshape(rows.shape[0], -1), bits))
    scales, biases = mx.array(step.astype(np.float32)).astype(dtype), mx.array(lo.astype(np.float32)).astype(dtype)
    back = mx.dequantize(packed, scales, biases, group_size=group_size, bits=bits)
    bad = np.nonzero(~np.array(mx.all(back == want, axis=-1)))[0]
    if bad.size:
        raise QuantizedBaseError(f"{bad.size} of {rows.shape[0]} launch rows do not fit the base's "
                                 f"{bits}-bit embedding groups of {group_size} exactly (first: row {int(bad[0])})")
    return packed, scales, biases
