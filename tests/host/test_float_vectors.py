"""CUDA's vector types (``host/prelude_vector.h``): ``float2``/``float4``/``int2``/``int4``
... declared as CUDA declares them, their 8- and 16-byte loads and stores (PTX
``ld.global.v4.f32 {...}``) one machine load or store per element; NumPy float32 oracles."""

from __future__ import annotations

import numpy as np
import pytest

from qwengpu_mlx.core.errors import UnsupportedError
from qwengpu_mlx.core.machine import LARGE_MACHINE
from qwengpu_mlx.host.launch import compile_kernel
from tests.support.cli import cu, needs_clang
from tests.support.launching import reference

PAIRS = """
__global__ void pairs(const float4 *a, float2 *out) {
  int i = threadIdx.x;
  float4 v = a[i];
  out[i] = make_float2(v.x + v.y, v.z * v.w);
}
"""

INTS = """
__global__ void ints(const int4 *a, const int2 *b, int4 *out) {
  int i = threadIdx.x;
  int4 v = a[i];
  int2 w = b[i];
  out[i] = make_int4(v.x + w.x, v.y - w.y, v.z * w.x, v.w ^ w.y);
}
"""


def _words(xs) -> list[int]:
    return [int(v) for v in np.asarray(xs, dtype=np.float32).view(np.uint32)]


@needs_clang
def test_float4_loads_are_vector_loads(tmp_path):
    ptx = compile_kernel(cu(tmp_path, PAIRS), "pairs").ptx
    assert "ld.global.v4.f32" in ptx and "st.global.v2.f32" in ptx


@needs_clang
def test_float4_in_and_float2_out(tmp_path):
    a = np.float32([1.5, -2.25, 3e-3, 7.0, 1e30, 1e30, 1e-30, 1e-20, -0.0, 0.0, 3.0, -4.0])
    out = reference(cu(tmp_path, PAIRS), args={"a": a.tolist(), "out": [0.0] * 6}, block=3,
                    machine=LARGE_MACHINE).outputs["out"]
    v = a.reshape(3, 4)
    want = np.stack([v[:, 0] + v[:, 1], v[:, 2] * v[:, 3]], axis=1).ravel()
    assert [x & 0xFFFFFFFF for x in out] == _words(want)


@needs_clang
def test_int4_and_int2_vectors(tmp_path):
    a = [1, 2, 3, 4, -5, 6, 70000, -8]
    b = [10, 20, -3, 9]
    out = reference(cu(tmp_path, INTS), args={"a": a, "b": b, "out": [0] * 8}, block=2).outputs["out"]
    want = []
    for i in range(2):
        x, y, z, w = a[4 * i:4 * i + 4]
        p, q = b[2 * i:2 * i + 2]
        want += [x + p, y - q, z * p, w ^ q]
    assert [o & 0xFFFFFFFF for o in out] == [w & 0xFFFFFFFF for w in want]


WIDE = """
struct __attribute__((aligned(16))) pair64 { long long x, y; };
__global__ void wide(const pair64 *a, long long *out) {
  pair64 v = a[threadIdx.x];
  out[threadIdx.x] = v.x + v.y;
}
"""


@needs_clang
def test_a_vector_of_64_bit_elements_is_refused_at_its_line(tmp_path):
    with pytest.raises(UnsupportedError, match=r"wide\.cu:4:.*v2\.u64.*elements one by one"):
        reference(cu(tmp_path, WIDE, "wide.cu"), args={"a": [1, 2, 3, 4], "out": [0, 0]}, block=2,
                  machine=LARGE_MACHINE)
