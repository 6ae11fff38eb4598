"""Float ``atomicAdd``: the old values and the word left are those of the machine's serial
order (warps in turn, lanes in ascending order within a warp; ``translate_atomics``),
each add a float32 add rounded to nearest even.

Expected values are NumPy's float32 sums taken in that order (NumPy adds float32 as
IEEE-754 says, subnormals kept). On global memory PTX's ``atom.add.f32`` flushes
subnormal inputs and results to sign-preserving zero, on shared memory it keeps them:
:func:`ftz` is that rule, written from the PTX ISA's text.
"""

from __future__ import annotations

import numpy as np
import pytest

from qwengpu_mlx.core.errors import UnsupportedError
from qwengpu_mlx.core.machine import LARGE_MACHINE
from qwengpu_mlx.host.launch import bind, compile_kernel
from tests.support.cli import cu, needs_clang
from tests.support.launching import reference

pytestmark = needs_clang

TINY = np.float32(2.0 ** -126)
CANONICAL_NAN = np.array([0x7FFFFFFF], dtype=np.int32).view(np.float32)[0]
"""The NaN a GPU's float arithmetic writes (NumPy's own NaN has other bits)."""


def f32(v) -> np.float32:
    return np.float32(v)


def pattern(v) -> int:
    """A float32's bits as the signed 32-bit word a launch's output holds."""
    return int(np.array([v], dtype=np.float32).view(np.int32)[0])


def ftz(v: np.float32) -> np.float32:
    """A subnormal made the zero of its sign (PTX's flush to zero); others as they are."""
    return np.copysign(f32(0), v) if 0 < abs(v) < TINY else v


def serial_adds(init, xs, *, flush: bool) -> tuple[list[int], int]:
    """(the old value each add returns, the final word) for adds in the order of ``xs``;
    a NaN sum is the canonical NaN, as a GPU writes it."""
    word, olds = f32(init), []
    for x in xs:
        olds.append(pattern(word))
        with np.errstate(invalid="ignore"):   # inf - inf: NumPy warns of the NaN it makes
            s = (ftz(word) + ftz(f32(x))) if flush else (word + f32(x))
        word = CANONICAL_NAN if np.isnan(s) else ftz(s) if flush else s
    return olds, pattern(word)


CONTENTION = """\
__global__ void contend(float* w, float* old, const float* x) {
    int t = threadIdx.x;
    old[t] = atomicAdd(&w[0], x[t]);
    atomicAdd(&w[1], x[t]);
}
"""

ORDERED = [16777216.0, 1.0, 1.0, 3.0, -16777216.0, 0.1, 0.2, 0.3]
"""Values whose float sum depends on the order: past 2^24 an added 1 is a tie to even."""


def test_contended_word_follows_the_serial_order_across_two_warps(tmp_path):
    """Eight threads (two warps of four lanes) add to one word: the old values and the
    sum are those of thread order, NumPy's float32 adds in that order."""
    r = reference(cu(tmp_path, CONTENTION, "contend.cu"), block=8, machine=LARGE_MACHINE,
                  args={"w": [0.5, 0.0], "old": [0.0] * 8, "x": ORDERED})
    olds, final = serial_adds(0.5, ORDERED, flush=True)
    _, second = serial_adds(0.0, ORDERED, flush=True)
    assert r.outputs["old"] == olds
    assert r.outputs["w"] == [final, second]


def test_specials_nan_and_infinities(tmp_path):
    xs = [np.inf, 1.0, -np.inf, 2.0]   # inf - inf is the canonical NaN, NaN + 2 too
    r = reference(cu(tmp_path, CONTENTION, "contend.cu"), block=4, machine=LARGE_MACHINE,
                  args={"w": [0.0, -0.0], "old": [0.0] * 4, "x": xs})
    olds, _ = serial_adds(0.0, xs, flush=True)
    assert r.outputs["old"] == olds
    assert r.outputs["w"][0] == 0x7FFFFFFF
    assert r.outputs["w"][1] == 0x7FFFFFFF


GLOBAL_AND_SHARED = """\
__global__ void tiny(float* w, float* old, const float* x) {
    __shared__ float s;
    int t = threadIdx.x;
    if (t == 0) s = w[1];
    __syncthreads();
    old[t] = atomicAdd(&w[0], x[t]);
    old[4 + t] = atomicAdd(&s, x[t]);
    __syncthreads();
    if (t == 0) w[1] = s;
}
"""


def test_subnormals_flush_in_global_memory_and_stay_in_shared(tmp_path):
    """The same adds of subnormals: flushed to signed zeros on the global word (the old
    value returned is the word as it was, a subnormal too), kept on the shared one."""
    init = -3e-39
    xs = [-1e-39, 2e-39, float(TINY * 1.5), float(-TINY)]   # the last sum is subnormal
    r = reference(cu(tmp_path, GLOBAL_AND_SHARED, "tiny.cu"), block=4, machine=LARGE_MACHINE,
                  args={"w": [init, init], "old": [0.0] * 8, "x": xs})
    g_olds, g_final = serial_adds(init, xs, flush=True)
    s_olds, s_final = serial_adds(init, xs, flush=False)
    assert g_olds[0] == pattern(init) and g_olds[1] == pattern(-0.0) and g_final == 0
    assert r.outputs["old"] == g_olds + s_olds
    assert r.outputs["w"] == [g_final, s_final]
    assert g_final != s_final


DIVERGENT = """\
__global__ void some(float* w, float* old, const float* x) {
    int t = threadIdx.x;
    if (x[t] > 0.0f) old[t] = atomicAdd(w, x[t]);
}
"""


def test_only_the_threads_that_call_it_add(tmp_path):
    xs = [0.75, -1.0, 1e30, 1.0]
    r = reference(cu(tmp_path, DIVERGENT, "some.cu"), block=4, machine=LARGE_MACHINE,
                  args={"w": [1.0], "old": [9.0] * 4, "x": xs})
    taken = [x for x in xs if x > 0]
    olds, final = serial_adds(1.0, taken, flush=True)
    assert r.outputs["w"] == [final]
    assert r.outputs["old"] == [olds[0], pattern(9.0), olds[1], olds[2]]


PTX = """\
.version 7.0
.target sm_75
.address_size 64

.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{{
\t.reg .b32 %r<3>;
\t.reg .f32 %f<3>;
\t.reg .b64 %rd<6>;
\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.param.u64 %rd3, [k_param_1];
\tcvta.to.global.u64 %rd4, %rd3;
\tmov.u32 %r1, %tid.x;
\tmul.wide.u32 %rd5, %r1, 4;
\tadd.s64 %rd4, %rd4, %rd5;
\tld.global.f32 %f1, [%rd4];
{line}
\tret;
}}
"""


def _ptx(tmp_path, line: str):
    path = tmp_path / "k.ptx"
    path.write_text(PTX.format(line=line))
    return path


def test_red_from_ptx_adds_without_an_old_value(tmp_path):
    xs = [1.0, 2.0 ** -24, 2.0 ** -24, 2.0 ** -24]
    r = reference(_ptx(tmp_path, "\tred.global.add.f32 [%rd2], %f1;"), block=4, machine=LARGE_MACHINE,
                  args={"param_0": [0], "param_1": [pattern(x) for x in xs]})
    assert r.outputs["param_0"] == [serial_adds(0.0, xs, flush=True)[1]]


@pytest.mark.parametrize("line,why", [
    ("\tatom.add.f32 %f2, [%rd2], %f1;", "generic address"),
    ("\tatom.global.min.f32 %f2, [%rd2], %f1;", "only atom.add.f32"),
    ("\tatom.global.add.rz.f32 %f2, [%rd2], %f1;", ".rz is not supported"),
])
def test_float_atomics_the_routine_does_not_compute_are_refused(tmp_path, line, why):
    with pytest.raises(UnsupportedError) as e:
        bind(compile_kernel(_ptx(tmp_path, line)), {"param_0": [0], "param_1": [0] * 4}, block=4,
             machine=LARGE_MACHINE)
    assert "PTX line" in str(e.value) and why in str(e.value), str(e.value)


EXCHANGE = """\
__global__ void swap(float* w, float* old, const float* x) {
    old[threadIdx.x] = atomicExch(w, x[threadIdx.x]);
}
"""


def test_float_exchange_moves_the_bits(tmp_path):
    """``atomicExch`` on a float is the integer exchange of its bits: -0, a NaN and a
    subnormal pass unchanged (no arithmetic, no flush), lanes in order."""
    xs = [-0.0, 2.5, float("nan"), 1e-40]
    r = reference(cu(tmp_path, EXCHANGE, "swap.cu"), block=4, machine=LARGE_MACHINE,
                  args={"w": [7.0], "old": [0.0] * 4, "x": xs})
    assert r.outputs["old"] == [pattern(7.0)] + [pattern(x) for x in xs[:3]]
    assert r.outputs["w"] == [pattern(xs[3])]
