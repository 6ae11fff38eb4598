"""Floats moved as their bits: ``ld``/``st``/``mov``/``selp`` of ``.f32``, float constants,
``__shared__`` floats, float parameters and the bit casts, on the reference interpreter.

Expected values come from NumPy's float32 (the bit pattern of each float the kernel
moves), never from the host: a kernel that only moves floats must leave each one's 32
bits as they were, NaN payloads and signed zeros included.
"""

from __future__ import annotations

import numpy as np
import pytest

from qwengpu_mlx.core.errors import UnsupportedError
from tests.support.cli import cu, needs_clang
from tests.support.launching import reference

MOVES = """\
__global__ void moves(const float* in, float* out, const int* x, float k) {
    __shared__ float buf[4];
    int i = threadIdx.x;
    buf[i] = in[i];
    __syncthreads();
    out[i] = (x[i] > 0) ? buf[3 - i] : 1.5f;
    if (i == 0) out[4] = k;
    out[5 + i] = __int_as_float(x[i]);
    if (i == 1) ((int*)out)[9] = __float_as_int(k);
}
"""


def bits(*values) -> list[int]:
    """Each value's float32 bit pattern as an unsigned 32-bit integer."""
    return [int(b) for b in np.array(values, dtype=np.float32).view(np.uint32)]


def as_unsigned(words: list[int]) -> list[int]:
    return [w & 0xFFFFFFFF for w in words]


@needs_clang
def test_floats_move_as_their_bits(tmp_path):
    src = bits(1.0, -0.0, float("nan"), 3.4028235e38)
    x = [1, -1, 2, 0]
    k = bits(-2.25)[0]
    r = reference(cu(tmp_path, MOVES, "moves.cu"), args={"in": src, "out": [0] * 10, "x": x, "k": k})
    chosen = [src[3 - i] if x[i] > 0 else bits(1.5)[0] for i in range(4)]
    assert as_unsigned(r.outputs["out"]) == chosen + [k] + as_unsigned(x) + [k]


@needs_clang
def test_a_nan_payload_and_a_subnormal_keep_their_bits(tmp_path):
    code = "__global__ void copy(const float* a, float* b) { b[threadIdx.x] = a[threadIdx.x]; }\n"
    words = [0x7FC00001, 0xFF812345, 0x00000001, 0x80000000]  # two NaNs, the smallest subnormal, -0
    r = reference(cu(tmp_path, code, "copy.cu"), args={"a": words, "b": [0] * 4})
    assert as_unsigned(r.outputs["b"]) == words


@needs_clang
def test_a_double_is_refused_at_the_users_line(tmp_path):
    code = "__global__ void k(double* a) {\n    a[threadIdx.x] = a[threadIdx.x + 1];\n}\n"
    with pytest.raises(UnsupportedError) as e:
        reference(cu(tmp_path, code, "k.cu"), args={"a": [0] * 10})
    assert str(e.value).startswith("k.cu:2: PTX line ") and ".f64" in str(e.value) and "use float" in str(e.value)
