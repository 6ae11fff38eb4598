"""No 64-bit address or constant silently wraps at 2^32.

* An index loaded from memory or scaled by a loop's stride reaches memory through a
  64-bit product (``mul.wide.s32``); one far past the arrays must fault, never wrap back
  to ``a[0]`` (``host/wide_index.py``, and exact folding of 64-bit constants).
* A 64-bit immediate beyond 32 bits is a clear error at compile time.
* The model backend's ``FAULT`` names the array and the index, as the reference does.

Expected outputs come from Python indexing of the same arrays (the oracle).
"""

from __future__ import annotations

import pytest

from qwengpu_mlx.core.errors import MemoryFault, UnsupportedError
from qwengpu_mlx.host.frontend import select_kernel
from qwengpu_mlx.host.launch import CompiledKernel, bind, compile_kernel
from tests.support.launching import reference
from qwengpu_mlx.host.ptx_parser import parse_ptx
from qwengpu_mlx.host.signature import KernelParam, ptx_param_name
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE

from tests.support.cli import cu, needs_clang

GATHER = "__global__ void gather(int* a, int* b, int* out) { int i = threadIdx.x; out[i] = a[b[i]]; }\n"
STRIDED = """\
__global__ void strided(int* a, int* out, int n, int step) {
    int s = 0;
    for (int k = 0; k < n; k++) s += a[k * step];
    out[threadIdx.x] = s;
}
"""
A = [1, 2, 3, 4]


@needs_clang
@pytest.mark.parametrize("far", [(1 << 30) + 1, -(1 << 30) + 1, 1 << 29, -(1 << 31)])
def test_a_loaded_index_far_outside_faults_instead_of_wrapping(tmp_path, far):
    path = cu(tmp_path, GATHER)
    with pytest.raises(MemoryFault, match="far outside every array"):
        reference(path, args={"a": A, "b": [0, far, 2, 3], "out": [0] * 4})


@needs_clang
def test_loaded_indices_inside_the_arrays_are_unchanged(tmp_path):
    b = [3, 1, 2, 0]
    r = reference(cu(tmp_path, GATHER), args={"a": A, "b": b, "out": [0] * 4})
    assert r.outputs["out"] == [A[j] for j in b]
    with pytest.raises(MemoryFault, match=r"ld address \d+ is outside the memory"):  # just past: a near fault
        reference(cu(tmp_path, GATHER, "g2.cu"), args={"a": A, "b": [0, 200, 2, 3], "out": [0] * 4})


@needs_clang
def test_a_loop_stride_past_32_bits_faults_and_a_small_one_runs(tmp_path):
    path = cu(tmp_path, STRIDED)
    with pytest.raises(MemoryFault, match="far outside every array"):
        reference(path, args={"a": A, "out": [0] * 4, "n": 2, "step": (1 << 30) + 1})
    for n, step in [(2, 2), (4, 1), (3, 0)]:
        r = reference(path, args={"a": A, "out": [0] * 4, "n": n, "step": step})
        assert r.outputs["out"] == [sum(A[k * step] for k in range(n))] * 4, (n, step)


def _ptx_kernel(body: str) -> CompiledKernel:
    text = f""".version 7.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [k_param_0];
{body}
\tret;
}}
"""
    module = parse_ptx(text)
    k = select_kernel(module, None)
    params = [KernelParam(ptx_param_name(p.name), True, p.type) for p in k.params]
    return CompiledKernel(None, text, module, k, params)


@pytest.mark.parametrize("body, value", [
    ("\tadd.s64 %rd2, %rd1, 4294967296;\n\tst.global.u32 [%rd2], %r1;", 4294967296),
    ("\tmov.u64 %rd2, 2147483648;\n\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r1;", 2147483648),
    ("\tadd.u32 %r2, %r1, 0x100000000;\n\tst.global.u32 [%rd1], %r2;", 1 << 32),
    ("\tst.global.u32 [8589934592], %r1;", 8589934592),
], ids=["add.s64", "mov.u64", "add.u32", "absolute"])
def test_an_immediate_past_32_bits_is_a_clear_error(body, value):
    with pytest.raises(UnsupportedError, match=rf"PTX line \d+: .*{value}.* does not fit in 32 bits"):
        bind(_ptx_kernel(body), {"param_0": [0, 0, 0, 0]})


def test_a_32_bit_pattern_and_a_negative_64_bit_immediate_still_lower():
    """0xFFFFFFFF is a u32 value and -4 a 64-bit offset: both fit, nothing is refused."""
    ok = "\tadd.u32 %r2, %r1, 0xFFFFFFFF;\n\tadd.s64 %rd2, %rd1, -4;\n\tst.global.u32 [%rd2+4], %r2;"
    bind(_ptx_kernel(ok), {"param_0": [0, 0, 0, 0]})


@needs_clang
def test_model_fault_names_the_array_and_index(tmp_path, store):
    from tests.support.launching import on_runner

    one = cu(tmp_path, "__global__ void one(int* a, int n) { a[threadIdx.x + n] = 7; }\n", "one.cu")
    program = bind(compile_kernel(one), {"a": A, "n": 200}, block=1, machine=PUBLISHED_MACHINE)
    with pytest.raises(MemoryFault, match=r"^the model stopped the launch: .*st address 800 .*: a\[200\]$"):
        on_runner(program, store.runner(PUBLISHED_MACHINE))
