"""32-lane CUDA warps on the 4-lane machine: what a kernel sees, and what is refused.

To a kernel a warp is 32 lanes (``warpSize``, ``%laneid``, the shuffles and votes) and,
since a block holds at most 32 threads, the warp is the thread block. Expected values
come from ``tests/support/oracles_warps`` (a 32-lane model of CUDA's definitions) or
are written out by hand from those definitions; the conformance kernels in
``examples/kernels`` cover the rest.
"""

from __future__ import annotations

import pytest

from qwengpu_mlx.core.errors import FrontendError, UnsupportedError
from qwengpu_mlx.core.machine import LARGE_MACHINE
from tests.support.cli import cli, cu, needs_clang
from tests.support.launching import reference
from tests.support.oracles_warps import shfl

pytestmark = needs_clang


def run(tmp_path, code: str, block: int, machine=None, **args):
    kw = {"machine": machine} if machine else {}
    return reference(cu(tmp_path, code), args=args, block=block, **kw)


# ------------------------------------------------------------------ what a kernel sees


def test_lane_is_the_linear_thread_index_and_warp_id_is_zero(tmp_path):
    code = ("__global__ void ids(int *lane, int *warp, int *size) {\n"
            "  unsigned l, w;\n"
            "  asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(l));\n"
            "  asm(\"mov.u32 %0, %%warpid;\" : \"=r\"(w));\n"
            "  lane[threadIdx.x] = l; warp[threadIdx.x] = w; size[threadIdx.x] = warpSize;\n}\n")
    z = [0] * 16
    out = run(tmp_path, code, 16, lane=z, warp=z, size=z).outputs
    assert out["lane"] == list(range(16))
    assert out["warp"] == [0] * 16
    assert out["size"] == [32] * 16


def test_canonical_reduction_over_the_whole_warp(tmp_path):
    code = ("__global__ void red(const int *x, int *out) {\n"
            "  int v = x[threadIdx.x];\n"
            "  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);\n"
            "  out[threadIdx.x] = v;\n}\n")
    x = [3 * i - 40 for i in range(32)]
    out = run(tmp_path, code, 32, LARGE_MACHINE, x=x, out=[0] * 32).outputs["out"]
    assert out[0] == sum(x)


def test_lanes_that_were_never_launched_read_zero(tmp_path):
    """blockDim.x = 4: lanes 4..31 were never launched (CUDA: undefined); they read 0, as a
    GPU's partial warp does, so the canonical 16-8-4-2-1 sum over [1, 2, 3, 4] is 10 at
    lane 0, as an NVIDIA GPU gives, and so is the sum starting from blockDim.x / 2."""
    code = ("__global__ void red(const int *x, int *from16, int *from2) {\n"
            "  int v = x[threadIdx.x], w = v;\n"
            "  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);\n"
            "  for (int o = 2; o > 0; o /= 2) w += __shfl_down_sync(0xffffffff, w, o);\n"
            "  from16[threadIdx.x] = v; from2[threadIdx.x] = w;\n}\n")
    out = run(tmp_path, code, 4, x=[1, 2, 3, 4], from16=[0] * 4, from2=[0] * 4).outputs
    v = [1, 2, 3, 4]
    for o in (16, 8, 4, 2, 1):
        v = list(map(int, v + shfl(v, 4, "down", o)))
    assert out["from16"] == v and v[0] == 10
    assert out["from2"][0] == 10


def test_shuffle_offsets_are_taken_modulo_32_like_ptx(tmp_path):
    code = ("__global__ void m(const int *x, int *out, int d) {\n"
            "  out[threadIdx.x] = __shfl_down_sync(0xffffffff, x[threadIdx.x], d);\n}\n")
    x = list(range(100, 116))
    out = run(tmp_path, code, 16, x=x, out=[0] * 16, d=33).outputs["out"]
    assert out == [int(v) for v in shfl(x, 16, "down", 1)]


def test_syncwarp_is_the_blocks_barrier(tmp_path):
    code = ("__global__ void sw(const int *x, int *out) {\n"
            "  __shared__ int s[16];\n"
            "  s[threadIdx.x] = x[threadIdx.x];\n"
            "  __syncwarp();\n"
            "  out[threadIdx.x] = s[15 - threadIdx.x];\n}\n")
    x = list(range(16))
    assert run(tmp_path, code, 16, x=x, out=[0] * 16).outputs["out"] == x[::-1]


def test_scratch_memory_only_with_warp_operations(tmp_path):
    plain = run(tmp_path, "__global__ void p(int *a) { a[threadIdx.x] += 1; }\n", 4, a=[0] * 4)
    assert plain.program.shared == {} or not any("warp" in k for k in plain.program.shared)
    xor = ("__global__ void x1(int *a) { a[threadIdx.x] = __shfl_xor_sync(0xffffffff, a[threadIdx.x], 1); }\n")
    hw = run(tmp_path, xor, 4, a=[1, 2, 3, 4])
    assert hw.outputs["a"] == [2, 1, 4, 3]
    assert not any("warp" in k for k in hw.program.shared)  # the 4-lane hardware shuffle: no scratch


def test_a_shuffle_that_does_not_fit_memory_says_so(tmp_path):
    code = ("__global__ void big(const int *x, int *out) {\n"
            "  out[threadIdx.x] = __shfl_down_sync(0xffffffff, x[threadIdx.x], 5);\n}\n")
    with pytest.raises(Exception, match=r"warp_shuffle_scratch: 32.*--machine large"):
        run(tmp_path, code, 8, x=[0] * 50, out=[0] * 50)


# ------------------------------------------------------------------ refused when compiled


REFUSED = [
    # (call in the kernel's line 3, what the message must say)
    ("__shfl_sync(m, v, 1)", "member mask"),
    ("__shfl_down_sync(0xffff, v, 1)", "member mask"),
    ("__shfl_xor_sync(__activemask(), v, 1)", "member mask"),
    ("(int)__ballot_sync(0xf, v > 0)", "member mask"),
    ("__any_sync(m, v)", "member mask"),
    ("__all_sync(1u, v)", "member mask"),
    ("__shfl_up_sync(0xffffffff, v, 1, 3)", "power of two"),
    ("__shfl_sync(0xffffffff, v, 1, 64)", "power of two"),
]


@pytest.mark.parametrize("call,why", REFUSED)
def test_refused_at_the_users_line(tmp_path, call, why):
    code = ("__global__ void k(int *a, unsigned m) {\n"
            "  int v = a[threadIdx.x];\n"
            f"  a[threadIdx.x] = {call};\n}}\n")
    with pytest.raises(FrontendError, match=rf"kernel\.cu:3:\d+: error: .*{why}"):
        run(tmp_path, code, 4, a=[0] * 4, m=0xFFFFFFFF)


def test_partial_syncwarp_refused(tmp_path):
    code = "__global__ void k(int *a) {\n  a[0] = 1;\n  __syncwarp(0xff);\n}\n"
    with pytest.raises(FrontendError, match=r"kernel\.cu:3:\d+: error: .*member mask"):
        run(tmp_path, code, 4, a=[0])


def test_a_32_lane_ptx_shuffle_is_refused_at_its_line(tmp_path):
    code = ("__global__ void k(int *a) {\n"
            "  int v = a[threadIdx.x], d;\n"
            "  asm volatile(\"shfl.sync.down.b32 %0, %1, 1, 31, -1;\" : \"=r\"(d) : \"r\"(v));\n"
            "  a[threadIdx.x] = d;\n}\n")
    with pytest.raises(UnsupportedError, match=r"kernel\.cu:3.*32-lane shfl\.sync"):
        run(tmp_path, code, 4, a=[0] * 4)


def test_a_partial_warp_barrier_in_ptx_is_refused(tmp_path):
    code = ("__global__ void k(int *a) {\n"
            "  a[threadIdx.x] = 1;\n"
            "  asm volatile(\"bar.warp.sync 3;\");\n}\n")
    with pytest.raises(UnsupportedError, match=r"kernel\.cu:3.*0xffffffff"):
        run(tmp_path, code, 4, a=[0] * 4)


def test_refusal_through_the_command_line(tmp_path):
    path = cu(tmp_path, "__global__ void k(int *a, unsigned m) {\n"
                        "  a[0] = __shfl_sync(m, a[1], 0);\n}\n")
    proc = cli("run", path, "--arg", "a=1,2", "--arg", "m=3")
    assert proc.returncode == 1, proc.stderr
    assert "kernel.cu:2:" in proc.stderr and "member mask" in proc.stderr
    assert "Traceback" not in proc.stderr
