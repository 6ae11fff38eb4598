"""``__fadd_rn``, ``__fsub_rn`` and ``__fmul_rn`` round each operation by itself.

CUDA documents them as never merged into a multiply-add: nvcc writes ``mul.rn.f32`` and
``add.rn.f32``, which ptxas leaves unfused, so ``__fadd_rn(__fmul_rn(a, b), c)`` rounds
twice on a GPU. clang 14 turns the NVVM intrinsics into a plain multiply and add and
contracts them into one ``fma.rn.f32`` (one rounding): a different float wherever the
product is inexact. The expected values are the two roundings done exactly
(``tests/support/oracles_float``), on inputs where one rounding would differ.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from qwengpu_mlx.core.machine import LARGE_MACHINE
from qwengpu_mlx.host.frontend import cuda_to_ptx
from tests.support.cli import cu, needs_clang
from tests.support.launching import reference
from tests.support.oracles_float import SIGN, add, fma, mul, to_binary32, words

ROUNDED_EACH = """
__global__ void rounded_each(const float* a, const float* b, const float* c, float* madd, float* msub,
                             float* mplus) {
    int i = threadIdx.x;
    madd[i] = __fadd_rn(__fmul_rn(a[i], b[i]), c[i]);
    msub[i] = __fsub_rn(__fmul_rn(a[i], b[i]), c[i]);
    mplus[i] = __fmul_rn(a[i], b[i]) + c[i];
}
"""

A = [1.0000001, 3.0, 0.1, 1.1754944e-38, 16777215.0, -7.3]
B = [1.0000001, 0.1, 0.1, 0.5, 1.0000001, 1.9]
C = [-1.0, -0.3, -0.01, 1e-45, -16777216.0, 13.87]


def _bits(values) -> list[int]:
    return [to_binary32(Fraction(float(np.float32(v)))) for v in values]


@needs_clang
def test_the_ptx_has_no_fused_multiply_add(tmp_path):
    ptx = cuda_to_ptx(cu(tmp_path, ROUNDED_EACH, "rounded_each.cu"))
    assert "fma" not in ptx
    assert "mul.rn.f32" in ptx and "add.rn.f32" in ptx and "sub.rn.f32" in ptx


@needs_clang
def test_each_operation_rounds_once_by_itself(tmp_path):
    a, b, c = _bits(A), _bits(B), _bits(C)
    products = [mul(x, y) for x, y in zip(a, b)]
    fused = [fma(x, y, z) for x, y, z in zip(a, b, c)]
    expected_add = [add(p, z) for p, z in zip(products, c)]
    assert sum(f != e for f, e in zip(fused, expected_add)) >= 4   # the inputs tell the two apart
    n = len(A)
    r = reference(cu(tmp_path, ROUNDED_EACH, "rounded_each.cu"), machine=LARGE_MACHINE, block=n,
                  args={"a": A, "b": B, "c": C, "madd": [0.0] * n, "msub": [0.0] * n, "mplus": [0.0] * n})
    assert r.outputs["madd"] == words(expected_add)
    assert r.outputs["msub"] == words(add(p, z ^ SIGN) for p, z in zip(products, c))
    assert r.outputs["mplus"] == words(expected_add)
