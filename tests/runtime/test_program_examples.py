"""The programs of ``examples/programs`` run whole (``qwengpu-mlx run prog.cu``) on the
reference interpreter, their stdout compared byte for byte with what each program means,
computed here with NumPy and Python from the program's own inputs (never from a run), and
their exit status with the program's; one of them through the model, checked.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qwengpu_mlx.cli.main import main
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, machine_name
from qwengpu_mlx.runtime.program_run import ProgramOptions, run_cuda_program

PROGRAMS = Path(__file__).resolve().parents[2] / "examples" / "programs"


def _lines(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


def vector_add() -> str:
    a = np.arange(10)
    b = 100 - 3 * np.arange(10)
    return _lines(*(f"{x} + {y} = {x + y}" for x, y in zip(a, b)))


def two_kernels() -> str:
    x = np.arange(8) - 3
    sq = x * x
    sums = sq + np.append(sq[1:], 0)
    return _lines("squares: " + " ".join(map(str, sq)), "sums: " + " ".join(map(str, sums)))


def stencil() -> str:
    cur = np.array([0, 0, 0, 1, 0, 0, 0, 0])
    for _ in range(3):
        cur = cur + np.append(cur[1:], 0) + np.insert(cur[:-1], 0, 0)
    return _lines("after 3 steps: " + " ".join(map(str, cur)))


def shared_reduce() -> str:
    h = (np.arange(14) * 7) % 5 - 1
    partial = [int(h[b * 4:(b + 1) * 4].sum()) for b in range(4)]
    return _lines("partial sums: " + " ".join(map(str, partial)), f"total: {sum(partial)}")


def histogram() -> str:
    values = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
    counts = np.bincount(np.array(values) % 4, minlength=4)
    return _lines(*(f"bin {b}: {c}" for b, c in enumerate(counts)))


def matrix_transpose() -> str:
    i = np.arange(24)
    t = (i * i - 10 * i).reshape(6, 4).T
    return _lines(*("".join(f"{v:5d}" for v in row) for row in t))


def hello_printf() -> str:
    """CUDA prints a kernel's printf output at the next synchronization, in thread order
    within a warp (the blocks here run one after another)."""
    greetings = [f"Hello from block {b}, thread {t}: id {3 * b + t}, value {100 + (3 * b + t) ** 2}"
                 for b in range(2) for t in range(3)]
    return _lines("launched", *greetings, "synchronized")


def saxpy_float() -> str:
    y = np.float32(2.0) * np.arange(20, dtype=np.float32) + np.float32(0.25) * np.arange(20, dtype=np.float32)
    return _lines(f"y[0] = {y[0]:f}, y[19] = {y[19]:f}", "Max error: 0.000000")


def argv_scale(n: int, factor: int) -> str:
    return _lines(" ".join(str(i * factor) for i in range(n)))


def self_check() -> str:
    return _lines("PASSED")


def symbols() -> str:
    xs = [-2, -1, 0, 1, 2, 3]
    return _lines(*(f"p({x}) = {1 - 2 * x + 3 * x * x}" for x in xs), f"linear: {1 - 2 * xs[0]} {1 - 2 * xs[-1]}",
                  "launch counter: 102")


def bad_launch(max_threads: int) -> str:
    threads = min(max_threads, 4)
    return _lines("<<<1, 2048>>>: cudaErrorInvalidConfiguration (invalid configuration argument)",
                  "after reading it: no error", "<<<0, 4>>>: invalid configuration argument",
                  "peeked, still there: invalid configuration argument",
                  f"<<<1, {threads}>>>: no error, out = " + " ".join(str(40 + i) for i in range(4)))


def device_query(mem_words: int, threads: int, name: str) -> str:
    total = 4 * mem_words
    return _lines("devices: 1", f"name: qwengpu-mlx {name} machine", "compute capability: 7.5",
                  f"total global memory: {total} bytes", f"shared memory per block: {total} bytes",
                  "warp size: 32", f"max threads per block: {threads}", f"cudaMalloc({total + 4}): out of memory",
                  "last error: cudaErrorMemoryAllocation")


CASES = [
    ("vector_add.cu", [], vector_add(), 0),
    ("two_kernels.cu", [], two_kernels(), 0),
    ("stencil.cu", [], stencil(), 0),
    ("shared_reduce.cu", [], shared_reduce(), 0),
    ("histogram.cu", [], histogram(), 0),
    ("argv_scale.cu", ["5", "-7"], argv_scale(5, -7), 0),
    ("self_check.cu", [], self_check(), 0),
    ("symbols.cu", [], symbols(), 0),
    ("bad_launch.cu", [], bad_launch(32), 0),
    ("device_query.cu", [], device_query(1024, 32, "large"), 0),  # a program's machine unless --machine
    ("matrix_transpose.cu", [], matrix_transpose(), 0),
    ("hello_printf.cu", [], hello_printf(), 0),
    ("saxpy_float.cu", [], saxpy_float(), 0),
    ("managed_memory.cu", [], _lines("Max error: 0"), 0),
    ("events.cu", [], _lines("elapsed time: measured", " ".join(str(i + 1) for i in range(8)) + " "), 0),
]


def run_program(capfd, name: str, args: list[str], *options: str) -> tuple[int, str, str]:
    """The command's exit status, stdout and stderr (the program's own fds are captured too)."""
    argv = ["run", str(PROGRAMS / name), *options]
    status = main(argv + (["--", *args] if args else []))
    out, err = capfd.readouterr()
    return status, out, err


@pytest.mark.parametrize("name,args,expected,status", CASES, ids=[c[0] for c in CASES])
def test_program_output(capfd, name, args, expected, status):
    got_status, out, err = run_program(capfd, name, args, "--backend", "reference", "--quiet")
    assert out == expected, err
    assert got_status == status, err
    assert "[launch" not in err  # --quiet: no summary lines


def test_summary_line_per_launch(capfd):
    status, out, err = run_program(capfd, "stencil.cu", [], "--backend", "reference")
    assert status == 0
    lines = [line for line in err.splitlines() if line.startswith("[launch")]
    assert lines == [f"[launch {i}] blur<<<2, 4>>> on the reference: " + lines[i - 1].split(": ", 1)[1]
                     for i in (1, 2, 3)]
    assert all("steps" in line for line in lines)


def test_fault_is_reported_and_the_program_sees_a_launch_failure(capfd):
    status, out, err = run_program(capfd, "fault.cu", [], "--backend", "reference", "--quiet")
    assert out == _lines("synchronize: unspecified launch failure", "memcpy after it: unspecified launch failure")
    assert status == 1
    assert "division by zero at fault.cu:9" in err


def test_argv_usage_exit_status(capfd):
    status, out, err = run_program(capfd, "argv_scale.cu", [], "--backend", "reference", "--quiet")
    assert status == 2 and out == "" and "usage:" in err


def test_default_machine_limits(capfd):
    status, out, err = run_program(capfd, "device_query.cu", [], "--backend", "reference", "--machine", "default")
    own = machine_name(DEFAULT_MACHINE)  # the machine's own name: "default" names another machine once it moves
    assert status == 0 and out == device_query(DEFAULT_MACHINE.mem_words, DEFAULT_MACHINE.max_block_dim, own)


def test_published_machine_limits(capfd):
    status, out, err = run_program(capfd, "device_query.cu", [], "--backend", "reference", "--machine", "published")
    assert status == 0 and out == device_query(126, 16, "published")


def test_vector_add_on_the_model_checked(capfd, store):
    """The session's circuit store (built once for every model test) runs the program's launch."""
    status = run_cuda_program(PROGRAMS / "vector_add.cu", [], ProgramOptions(backend="model", check=True),
                              store=store)
    out, err = capfd.readouterr()
    assert out == vector_add(), err
    assert status == 0, err
    summary = [line for line in err.splitlines() if line.startswith("[launch 1] vectorAdd<<<3, 4>>> on the model")]
    assert summary and summary[0].endswith(", exact") and " tokens, " in summary[0], err
