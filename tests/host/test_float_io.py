"""Floats moved as their bits: ``ld``/``st``/``mov``/``selp`` of ``.f32``, float constants,
``__shared__`` floats, float parameters and the bit casts, on the reference interpreter.

Expected values come from NumPy's float32 (the bit pattern of each float the kernel
moves), never from the host: a kernel that only moves floats must leave each one's 32
bits as they were, NaN payloads and signed zeros included.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from rich.console import Console

from qwengpu_mlx.core.errors import UnsupportedError
from qwengpu_mlx.core.machine import LARGE_MACHINE
from qwengpu_mlx.host.launch import compile_kernel
from qwengpu_mlx.tui.decode import MachineState
from qwengpu_mlx.tui.widgets.machine_pane import memory_table
from tests.support.cli import cli, cu, needs_clang
from tests.support.launching import bound_program, reference

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


def pattern(word: int) -> str:
    """A float argument given as its bits, as PTX spells them (``0f3FC00000``)."""
    return f"0f{word:08X}"


@needs_clang
def test_floats_move_as_their_bits(tmp_path):
    values = [1.0, -0.0, float("nan"), 3.4028234663852886e38]
    src = bits(*values)
    x = [1, -1, 2, 0]
    r = reference(cu(tmp_path, MOVES, "moves.cu"), args={"in": values, "out": [0] * 10, "x": x, "k": -2.25})
    k = bits(-2.25)[0]
    chosen = [src[3 - i] if x[i] > 0 else bits(1.5)[0] for i in range(4)]
    assert as_unsigned(r.outputs["out"]) == chosen + [k] + as_unsigned(x) + [k]


@needs_clang
def test_a_nan_payload_and_a_subnormal_keep_their_bits(tmp_path):
    code = "__global__ void copy(const float* a, float* b) { b[threadIdx.x] = a[threadIdx.x]; }\n"
    words = [0x7FC00001, 0xFF812345, 0x00000001, 0x80000000]  # two NaNs, the smallest subnormal, -0
    r = reference(cu(tmp_path, code, "copy.cu"), args={"a": [pattern(w) for w in words], "b": [0] * 4})
    assert as_unsigned(r.outputs["b"]) == words


@needs_clang
def test_a_double_is_refused_at_the_users_line(tmp_path):
    code = "__global__ void k(double* a) {\n    a[threadIdx.x] = a[threadIdx.x + 1];\n}\n"
    with pytest.raises(UnsupportedError) as e:
        reference(cu(tmp_path, code, "k.cu"), args={"a": [0] * 10})
    assert str(e.value).startswith("k.cu:2: PTX line ") and ".f64" in str(e.value) and "use float" in str(e.value)


SAXPY_MOVE = """\
__global__ void pick(float a, const float* x, float* y, const int* use) {
    int i = threadIdx.x;
    y[i] = use[i] ? x[i] : a;
}
"""


@needs_clang
def test_run_takes_decimals_and_prints_shortest_decimals(tmp_path):
    path = cu(tmp_path, SAXPY_MOVE, "pick.cu")
    r = cli("run", path, "--arg", "a=-2.25", "--arg", "x=0.1,nan,-0,3e-3", "--arg", "y=0,0,0,0",
            "--arg", "use=1,1,1,0")
    assert r.returncode == 0, r.stderr
    assert "  y = [0.1, nan, -0.0, -2.25]" in r.stdout.splitlines()
    assert "  use = [1, 1, 1, 0]" in r.stdout.splitlines()


@needs_clang
def test_json_writes_numbers_and_nan_as_a_string(tmp_path):
    path = cu(tmp_path, SAXPY_MOVE, "pick.cu")
    r = cli("run", path, "--json", "--arg", "a=inf", "--arg", "x=1e-45,nan,-inf,16777217",
            "--arg", "y=0,0,0,0", "--arg", "use=1,1,1,0")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)["outputs"]
    assert out["y"] == [1e-45, "nan", "-inf", "inf"] and out["use"] == [1, 1, 1, 0]
    assert '"x": [1e-45, "nan", "-inf", 16777216.0]' in r.stdout


@needs_clang
def test_a_launch_file_gives_floats_as_numbers_and_strings(tmp_path):
    path = cu(tmp_path, SAXPY_MOVE, "pick.cu")
    (tmp_path / "pick.json").write_text('{"block": 2, "args": {"a": 0.1, "x": [2.5, "-inf"], "y": [0, 0], '
                                        '"use": [0, 1]}}')
    r = cli("run", path)
    assert r.returncode == 0, r.stderr
    assert "  y = [0.1, -inf]" in r.stdout.splitlines()


@needs_clang
@pytest.mark.parametrize("arg, says", [
    ("a=one", "'one' is not a decimal number"),
    ("a=1,2", "`a` is a scalar"),
])
def test_a_float_that_is_no_number_is_refused_naming_the_parameter(tmp_path, arg, says):
    path = cu(tmp_path, SAXPY_MOVE, "pick.cu")
    r = cli("run", path, "--arg", arg, "--arg", "x=1,2,3,4", "--arg", "y=0,0,0,0", "--arg", "use=1,1,1,0")
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr


@needs_clang
def test_a_ptx_file_knows_its_floats_from_the_mangled_name(tmp_path):
    """No source to read: the ``.param .f32`` scalar and the name's ``Pf`` pointers."""
    ptx = compile_kernel(cu(tmp_path, SAXPY_MOVE, "pick.cu")).ptx
    (tmp_path / "pick.ptx").write_text(ptx)
    r = cli("run", tmp_path / "pick.ptx", "--arg", "param_0=1.5", "--arg", "param_1=0.5,0.25",
            "--arg", "param_2=0,0", "--arg", "param_3=0,1", "--block", "2")
    assert r.returncode == 0, r.stderr
    assert "  param_2 = [1.5, 0.25]" in r.stdout.splitlines()


@needs_clang
def test_the_dashboard_shows_a_float_arrays_words_as_floats(tmp_path):
    """The machine pane's memory table: ``float*`` words as decimals, ``int*`` words as integers."""
    prog = bound_program(cu(tmp_path, SAXPY_MOVE, "pick.cu"), block=2,
                         args={"a": 0.1, "x": [2.5, "-inf"], "y": [0, 0], "use": [7, 1]})
    console = Console(width=80, record=True)
    console.print(memory_table(MachineState(prog)))
    text = console.export_text()
    assert "2.5" in text and "-inf" in text and "7" in text
    assert str(bits(2.5)[0]) not in text


SHUFFLES = """\
__global__ void spread(const float* x, float* out) {
    int i = threadIdx.x;
    out[2 * i] = __shfl_sync(0xffffffff, x[i], 0);
    out[2 * i + 1] = __shfl_down_sync(0xffffffff, x[i], 1);
}
"""


@needs_clang
def test_a_float_shuffles_as_its_bits(tmp_path):
    """``__shfl_sync`` of a float moves its 32 bits (CUDA's float overload), not ``(int)x``."""
    values = [1.5, -0.0, float("nan"), 1e-45, -2.25, 3.0, float("-inf"), 0.1]
    r = reference(cu(tmp_path, SHUFFLES, "spread.cu"), block=8, machine=LARGE_MACHINE,
                  args={"x": values, "out": [0] * 16})
    words = bits(*values)
    down = [words[i + 1] if i + 1 < 8 else 0 for i in range(8)]  # lane 8 was never launched: it reads 0
    assert as_unsigned(r.outputs["out"]) == [w for i in range(8) for w in (words[0], down[i])]


@needs_clang
def test_a_typedef_float_is_a_float_by_its_mangled_name(tmp_path):
    """``real*`` says nothing to the source scan; the mangled ``Pf`` does."""
    code = "typedef float real;\n__global__ void k(const real* a, real* b) { b[threadIdx.x] = a[threadIdx.x]; }\n"
    r = cli("run", cu(tmp_path, code, "real.cu"), "--arg", "a=0.1,-2.5", "--arg", "b=0,0", "--block", "2")
    assert r.returncode == 0, r.stderr
    assert "  b = [0.1, -2.5]" in r.stdout.splitlines()
