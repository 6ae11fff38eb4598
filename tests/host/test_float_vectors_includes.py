"""Kernel files as people paste them: ``#include <cuda_runtime.h>`` (the project's own, on
every kernel's include path) and CUDA's vector types compile as a kernel file, not only
inside a whole program; whole programs keep compiling with both."""

from __future__ import annotations

from qwengpu_mlx.core.machine import LARGE_MACHINE
from tests.support.cli import cu, needs_clang
from tests.support.launching import reference

PASTED = """
#include <cuda_runtime.h>
#include <cstdio>

__global__ void scale(const float2 *v, float *out, float k) {
  int i = threadIdx.x;
  float2 p = v[i];
  out[i] = k * p.x + p.y;
}
"""


@needs_clang
def test_a_kernel_file_including_cuda_runtime_compiles_and_runs(tmp_path):
    # 2 * 1.5 + 0.25, 2 * -1 + 4, 2 * 0.5 + 0: one fma each, exact in float32
    out = reference(cu(tmp_path, PASTED), args={"v": [1.5, 0.25, -1.0, 4.0, 0.5, 0.0], "out": [0.0] * 3, "k": 2.0},
                    block=3, machine=LARGE_MACHINE).outputs["out"]
    assert [x & 0xFFFFFFFF for x in out] == [0x40500000, 0x40000000, 0x3F800000]
