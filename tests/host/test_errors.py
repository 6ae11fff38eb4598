"""Every bad input gets a clear error naming the construct and the limit it broke.

Each case goes through the command line (a subprocess: exit status 2, ``error: ...`` on
stderr, never a traceback) and/or the Python API (the exception class and its message).
Kernels are written inline; clang compiles them with the project's prelude.
"""

from __future__ import annotations

import re
import sys

import pytest

from qwengpu_mlx.core.errors import (
    BarrierDeadlock,
    ClangNotFound,
    FrontendError,
    LaunchError,
    MemoryFault,
    QwenGpuError,
    ResourceError,
    StepBudgetExceeded,
    UnsupportedError,
)
from qwengpu_mlx.host.frontend import select_kernel
from qwengpu_mlx.host.launch import CompiledKernel, bind, compile_kernel
from tests.support.launching import reference
from qwengpu_mlx.host.ptx_parser import parse_ptx
from qwengpu_mlx.host.signature import KernelParam, ptx_param_name
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE


from tests.support.cli import cli, cu, needs_clang


# --------------------------------------------------------------------------- helpers


def cli_error(*argv, env: dict | None = None) -> str:
    """Run the CLI expecting a user error: exit 1 (kernel) or 2 (usage), one ``error:``
    message, no traceback (``test_exit_status`` pins which is which)."""
    proc = cli(*argv, env=env)
    assert proc.returncode in (1, 2), (proc.returncode, proc.stdout, proc.stderr)  # kernel 1, usage 2
    assert proc.stderr.startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr[len("error: "):]


def ptx_kernel(text: str) -> CompiledKernel:
    """A hand-written PTX kernel, parsed, with ``param_N`` parameter names."""
    module = parse_ptx(text)
    k = select_kernel(module, None)
    params = [KernelParam(ptx_param_name(p.name), p.type in ("u64", "b64", "s64"), p.type) for p in k.params]
    return CompiledKernel(None, text, module, k, params)


INC = """\
__global__ void inc(int *a, int n) {
  int i = threadIdx.x;
  if (i < n) a[i] = a[i] + 1;
}
"""


# --------------------------------------------------------------------------- front end


@needs_clang
def test_cuda_syntax_error_passes_clangs_diagnostic_through(tmp_path):
    path = cu(tmp_path, "__global__ void k(int *a) {\n  a[0] = 1\n}\n", "syntax.cu")
    msg = cli_error("run", path, "--arg", "a=0")
    assert "clang could not compile" in msg
    assert re.search(r"syntax\.cu:2:\d+: error: expected ';'", msg), msg
    with pytest.raises(FrontendError) as ei:
        compile_kernel(path)
    assert f"{path}:2:" in str(ei.value)
    assert not isinstance(ei.value, ClangNotFound)


@needs_clang
def test_missing_source_file_is_a_frontend_error(tmp_path):
    msg = cli_error("run", tmp_path / "nope.cu")
    assert "nope.cu" in msg and "no such file" in msg
    with pytest.raises(FrontendError, match="no such file"):
        compile_kernel(tmp_path / "nope.cu")


def test_text_that_is_not_ptx_is_a_frontend_error(tmp_path):
    path = tmp_path / "junk.ptx"
    path.write_text("this is not PTX at all {\n")
    msg = cli_error("compile", path)
    assert "PTX" in msg


# --------------------------------------------------------------------------- unsupported PTX


UNSUPPORTED = {
    # id: (kernel body for `__global__ void k(int *a, int b)`, PTX instruction named)
    "popc64": ("a[threadIdx.x] = __builtin_popcountll((unsigned long long)a[threadIdx.x] * b);", "popc.b64"),
    "brev64": ("a[threadIdx.x] = (int)__builtin_bitreverse64((unsigned long long)a[threadIdx.x]);", "brev.b64"),
    "prmt-runtime-selector": ("a[threadIdx.x] = __byte_perm(a[threadIdx.x], 7, b);", "prmt.b32"),
}


@needs_clang
@pytest.mark.parametrize("which", sorted(UNSUPPORTED))
def test_unsupported_ptx_instruction_is_named(tmp_path, which):
    body, instr = UNSUPPORTED[which]
    path = cu(tmp_path, f"__global__ void k(int *a, int b) {{ {body} }}\n")
    msg = cli_error("compile", path)
    assert re.match(r"kernel\.cu:1: PTX line \d+: ", msg), msg
    assert instr in msg
    assert "not supported" in msg
    with pytest.raises(UnsupportedError) as ei:
        reference(path, args={"a": [1, 2, 3, 4], "b": 3})
    assert instr in str(ei.value)


@needs_clang
def test_division_by_zero_stops_the_launch_at_the_cu_line(tmp_path):
    """A real GPU returns garbage; this machine names the division and the lane."""
    path = cu(tmp_path, "__global__ void k(int *a, int b) {\n  a[threadIdx.x] /= b;\n}\n")
    msg = cli_error("run", path, "--backend", "reference", "--arg", "a=1,2,3,4", "--arg", "b=0")
    assert msg.startswith("division by zero at kernel.cu:2 (`div.s32"), msg
    assert "the divisor is 0 on lane 0" in msg


@needs_clang
@pytest.mark.parametrize("code, construct", [
    ("__global__ void k(double *a) { a[threadIdx.x] = a[threadIdx.x] + a[threadIdx.x + 1]; }\n", ".f64"),
    ("__global__ void k(double *a) { a[threadIdx.x] = a[threadIdx.x] * 1.5; }\n", "0d3FF8000000000000"),
    ("__global__ void k(int *a) { a[threadIdx.x] = (int)((double)a[threadIdx.x] * 0.5); }\n", "0d3FE0000000000000"),
], ids=["f64-type", "double-immediate", "int-double-int"])
def test_double_precision_is_rejected(tmp_path, code, construct):
    """The machine's floats are binary32: a double is refused, saying to use float."""
    path = cu(tmp_path, code)
    msg = cli_error("compile", path)
    assert "floating-point" in msg and construct in msg and "use float" in msg
    with pytest.raises(UnsupportedError, match="floating-point"):
        reference(path, args={"a": [1, 2, 3, 4, 5]})


@needs_clang
@pytest.mark.parametrize("code, construct, hint", [
    # a single kernel's arguments are a word a value: a 64-bit array is refused
    ("__global__ void k(long long *o, int *b) { o[0] = (long long)b[0] * b[1]; }\n", "st.global.u64",
     "pass int or unsigned arrays"),
    # the machine's division routine is 32-bit
    ("__global__ void k(int *b) { long long x = (long long)b[0] * 1000000; b[2] = (int)(x / b[1]); }\n",
     "div.s64", "divide 32-bit values"),
], ids=["array", "divided"])
def test_64bit_integers_beyond_the_machine_are_rejected(tmp_path, code, construct, hint):
    """64-bit values run as pairs of words (``wide64``); a 64-bit array argument and a
    64-bit division are refused, naming the construct and the way around it."""
    path = cu(tmp_path, code)
    msg = cli_error("compile", path)
    assert "64-bit" in msg and construct in msg and hint in msg
    with pytest.raises(UnsupportedError, match="64-bit"):
        ck = compile_kernel(path)
        bind(ck, {p.name: ([0, 0, 0] if p.pointer else 0) for p in ck.params})


# --------------------------------------------------------------------------- resources


def _live_values_kernel(name: str, n: int) -> str:
    """n values loaded before a barrier, all used after it: n values live at once."""
    body = "".join(f"  int v{i} = a[{i}];\n" for i in range(n))
    body += "  a[0] = 0;\n  __syncthreads();\n"
    body += "".join(f"  a[{i}] = v{i} * v{(i + 1) % n} + {i};\n" for i in range(n))
    return f"__global__ void {name}(int *a) {{\n{body}}}\n"


@needs_clang
def test_too_many_registers_names_kernel_count_and_limit(tmp_path):
    path = cu(tmp_path, _live_values_kernel("many", 20))
    values = ",".join(str(i) for i in range(1, 21))
    msg = cli_error("run", path, "--arg", f"a={values}", "--block", "1")
    assert "many" in msg
    assert f"more than {PUBLISHED_MACHINE.usable_regs} registers" in msg
    m = re.search(r"(\d+) values live at once near kernel\.cu:\d+: PTX line (\d+)", msg)
    assert m and int(m.group(1)) > PUBLISHED_MACHINE.usable_regs, msg
    assert "16 register rows" in msg and "row 0 reads zero" in msg
    with pytest.raises(ResourceError, match="15 registers"):
        reference(path, args={"a": list(range(20))}, block=1)


def test_too_many_predicates_names_count_and_limit():
    setps = "\n".join(f"\tsetp.gt.s32 \t%p{i + 1}, %r1, {i};" for i in range(9))
    uses = "\n".join(f"\t@%p{i + 1} add.s32 \t%r2, %r2, {1 << i};" for i in range(9))
    ptx = f""".version 7.0
.target sm_75
.address_size 64

.visible .entry preds(
\t.param .u64 preds_param_0
)
{{
\t.reg .pred \t%p<10>;
\t.reg .b32 \t%r<3>;
\t.reg .b64 \t%rd<3>;

\tld.param.u64 \t%rd1, [preds_param_0];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tld.global.u32 \t%r1, [%rd2];
\tmov.u32 \t%r2, 0;
{setps}
{uses}
\tst.global.u32 \t[%rd2+4], %r2;
\tret;
}}
"""
    with pytest.raises(ResourceError) as ei:
        bind(ptx_kernel(ptx), {"param_0": [5, 0]})
    msg = str(ei.value)
    assert "preds" in msg and f"more than {PUBLISHED_MACHINE.preds} predicate registers" in msg
    assert "9 live at once" in msg


@needs_clang
def test_program_larger_than_the_rom(tmp_path):
    ops = ["x = x * 3 + {i};", "x = x ^ (x >> 3);", "x = x + (x << 5);"]
    body = "".join("  " + ops[i % 3].format(i=i) + "\n" for i in range(150))
    path = cu(tmp_path, f"__global__ void longk(int *a) {{\n  int x = a[threadIdx.x];\n{body}"
                        f"  a[threadIdx.x] = x;\n}}\n")
    msg = cli_error("compile", path, "--machine", "published")
    m = re.search(r"needs (\d+) machine blocks \((\d+) instructions\)", msg)
    assert m and int(m.group(1)) > PUBLISHED_MACHINE.rom_blocks, msg
    assert "longk" in msg
    assert f"ROM holds {PUBLISHED_MACHINE.rom_blocks} blocks of {PUBLISHED_MACHINE.slots_per_block}" in msg
    with pytest.raises(ResourceError, match="ROM holds 32 blocks"):
        reference(path, args={"a": [1, 2, 3, 4]})


@needs_clang
def test_arrays_larger_than_memory(tmp_path):
    path = cu(tmp_path, INC)
    values = ",".join(["1"] * 130)
    msg = cli_error("run", path, "--arg", f"a={values}", "--arg", "n=4", "--machine", "published")
    assert "130 memory words" in msg and "a: 130" in msg
    assert f"the machine has {PUBLISHED_MACHINE.mem_words}" in msg
    with pytest.raises(ResourceError, match="126"):
        reference(path, args={"a": [0] * 127, "n": 1})
    # exactly the memory fits
    res = reference(path, args={"a": [5] * 126, "n": 2})
    assert res.outputs["a"][:3] == [6, 6, 5]


@needs_clang
def test_shared_memory_counts_against_the_memory(tmp_path):
    path = cu(tmp_path, """\
__global__ void sh(int *a) {
  __shared__ int s[16];
  s[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  a[threadIdx.x] = s[3 - threadIdx.x];
}
""")
    with pytest.raises(ResourceError) as ei:
        reference(path, args={"a": [1] * 120})
    msg = str(ei.value)
    assert "136 memory words" in msg and "a: 120" in msg and "__shared__" in msg and "126" in msg


@needs_clang
@pytest.mark.parametrize("flag, value, text", [
    ("--block", 17, "blockDim.x = 17"),
    ("--block", 0, "blockDim.x = 0"),
    ("--grid", 0, "gridDim.x = 0"),
])
def test_launch_geometry_out_of_range(tmp_path, flag, value, text):
    path = cu(tmp_path, INC)
    msg = cli_error("run", path, "--arg", "a=1,2,3,4", "--arg", "n=4", flag, value, "--machine", "published")
    assert text in msg
    if "block" in flag:
        assert "1..16 threads per block" in msg
    else:
        assert "at least 1" in msg
    kw = {"block": value} if flag == "--block" else {"grid": value}
    with pytest.raises(ResourceError, match=re.escape(text)):
        reference(path, args={"a": [1, 2, 3, 4], "n": 4}, **kw)


# --------------------------------------------------------------------------- arguments


@needs_clang
def test_missing_arg_is_named_and_parameters_listed(tmp_path):
    path = cu(tmp_path, INC)
    msg = cli_error("run", path, "--arg", "a=1,2")
    assert "takes parameters (a, n)" in msg and "missing --arg for n" in msg
    with pytest.raises(LaunchError, match="missing --arg for n"):
        reference(path, args={"a": [1, 2]})


@needs_clang
def test_extra_arg_is_named_and_parameters_listed(tmp_path):
    path = cu(tmp_path, INC)
    msg = cli_error("run", path, "--arg", "a=1,2", "--arg", "n=1", "--arg", "m=3")
    assert "takes parameters (a, n)" in msg and "no parameter named m" in msg
    with pytest.raises(LaunchError, match="no parameter named m"):
        reference(path, args={"a": [1, 2], "n": 1, "m": 3})


@needs_clang
def test_scalar_given_a_list(tmp_path):
    path = cu(tmp_path, INC)
    msg = cli_error("run", path, "--arg", "a=1,2", "--arg", "n=1,2")
    assert "`n` is a scalar (int n)" in msg and "one integer" in msg
    with pytest.raises(LaunchError, match="scalar"):
        reference(path, args={"a": [1, 2], "n": [1, 2]})


@needs_clang
@pytest.mark.parametrize("arg", ["a=1,x", "n=1.5", "n=abc"])
def test_non_integer_values(tmp_path, arg):
    path = cu(tmp_path, INC)
    others = {"a": "a=1,2", "n": "n=1"}
    others[arg.split("=")[0]] = arg
    msg = cli_error("run", path, "--arg", others["a"], "--arg", others["n"])
    assert f"--arg {arg}" in msg and "must be integers" in msg


@needs_clang
def test_non_integer_values_api(tmp_path):
    path = cu(tmp_path, INC)
    with pytest.raises(LaunchError, match="must be integers"):
        reference(path, args={"a": "1,q", "n": 1})
    with pytest.raises(LaunchError, match="32 bits"):
        reference(path, args={"a": [1, 2], "n": 1 << 32})


@needs_clang
def test_float_values_through_the_api_are_rejected(tmp_path):
    path = cu(tmp_path, INC)
    with pytest.raises(LaunchError):
        reference(path, args={"a": [1, 2, 3, 4], "n": 2.7})


@needs_clang
def test_ill_formed_and_repeated_args(tmp_path):
    path = cu(tmp_path, INC)
    msg = cli_error("run", path, "--arg", "a")
    assert "--arg 'a'" in msg and "NAME=" in msg
    msg = cli_error("run", path, "--arg", "a=1", "--arg", "n=1", "--arg", "n=2")
    assert "--arg n given twice" in msg
    msg = cli_error("run", path, "--arg", "a=", "--arg", "n=1")
    assert "pointer parameter `a` needs at least one value" in msg


@needs_clang
def test_parameter_names_come_from_the_definition_not_a_prototype(tmp_path):
    path = cu(tmp_path, "__global__ void proto(int *, int);\n\n"
                        "__global__ void proto(int *a, int n) { a[threadIdx.x] += n; }\n")
    res = reference(path, args={"a": [1, 2, 3, 4], "n": 5})
    assert res.outputs["a"] == [6, 7, 8, 9]


@needs_clang
def test_error_messages_use_the_unmangled_kernel_name(tmp_path):
    path = cu(tmp_path, INC)
    with pytest.raises(LaunchError) as ei:
        reference(path, args={"a": [1, 2]})
    assert "`inc`" in str(ei.value) and "_Z" not in str(ei.value)
    with pytest.raises(ResourceError) as ei:
        reference(path, args={"a": [0] * 130, "n": 1})
    assert "`inc`" in str(ei.value) and "_Z" not in str(ei.value)


# --------------------------------------------------------------------------- kernels by name


TWO = """\
__global__ void first(int *a) { a[threadIdx.x] = 1; }
__global__ void second(int *a) { a[threadIdx.x] = 2; }
"""


@needs_clang
def test_unknown_kernel_lists_available_kernels(tmp_path):
    path = cu(tmp_path, TWO)
    msg = cli_error("run", path, "--kernel", "third", "--arg", "a=0")
    assert "no kernel named 'third'" in msg and "available kernels: first, second" in msg
    with pytest.raises(FrontendError, match="available kernels: first, second"):
        compile_kernel(path, "third")


@needs_clang
def test_several_kernels_need_a_name(tmp_path):
    path = cu(tmp_path, TWO)
    msg = cli_error("run", path, "--arg", "a=0")
    assert "2 kernels" in msg and "first, second" in msg
    proc = cli("run", path, "--kernel", "second", "--arg", "a=0,0,0,0", "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"a": [2, 2, 2, 2]' in proc.stdout


# --------------------------------------------------------------------------- running


DEADLOCK = """\
__global__ void dl(int *a) {
  int t = threadIdx.x;
  if (t % 4 < 2) {
    __syncthreads();
    a[t] = a[t ^ 1] + 1;
  } else {
    a[t] = 2;
  }
}
"""


@needs_clang
def test_barrier_in_divergent_code_deadlocks(tmp_path):
    path = cu(tmp_path, DEADLOCK)
    msg = cli_error("run", path, "--arg", "a=0,0,0,0")
    m = re.search(r"barrier deadlock in thread block 0 at bar\.sync in (B\d+)", msg)
    assert m, msg
    assert f"warp 0 lanes 0,1 (bar.sync in {m.group(1)})" in msg
    assert "blocked (live, not at the barrier): warp 0 lanes 2,3" in msg
    # the barrier block really is a bar.sync block of the listing
    listing = cli("compile", path).stdout
    block = re.search(rf"^{m.group(1)}\b.*?(?=^B\d|\Z)", listing, re.M | re.S).group(0)
    assert "bar.sync" in block
    with pytest.raises(BarrierDeadlock, match="bar.sync"):
        reference(path, args={"a": [0, 0, 0, 0]})
    # only lanes 0 and 1 in the launch: nobody is left behind, no deadlock
    res = reference(path, args={"a": [0, 0, 0, 0]}, block=2)
    assert res.outputs["a"] == [1, 1, 0, 0]


SPIN = """\
__global__ void spin(volatile int *x) {
  while (x[0] == 0) { }
  x[1] = 1;
}
"""


@needs_clang
def test_step_budget_exceeded_names_the_budget(tmp_path):
    path = cu(tmp_path, SPIN)
    msg = cli_error("run", path, "--arg", "x=0,0", "--step-budget", "100")
    assert "step budget exceeded" in msg and "100 steps ran (budget 100)" in msg
    assert "--step-budget" in msg
    with pytest.raises(StepBudgetExceeded, match=r"budget 37\)") as ei:
        reference(path, args={"x": [0, 0]}, step_budget=37)
    assert ei.value.result.steps == 37
    # the loop ends when x[0] is set: within the budget, the launch finishes
    res = reference(path, args={"x": [1, 0]}, step_budget=100)
    assert res.outputs["x"] == [1, 1]


@needs_clang
def test_default_step_budget(tmp_path):
    path = cu(tmp_path, SPIN)
    with pytest.raises(StepBudgetExceeded, match=f"budget {PUBLISHED_MACHINE.step_budget}"):
        reference(path, args={"x": [0, 0]})


OOB = "__global__ void oob(int *a, int n) { a[threadIdx.x + n] = 7; }\n"


@needs_clang
def test_memory_fault_names_the_address(tmp_path):
    path = cu(tmp_path, OOB)
    msg = cli_error("run", path, "--arg", "a=1,2,3,4", "--arg", "n=200", "--machine", "published")
    assert "memory fault at step 0" in msg
    assert "lane 0" in msg and "st address 800" in msg  # 4 * (200 + 0)
    assert "outside the memory (bytes 0..503, 126 words)" in msg
    with pytest.raises(MemoryFault, match="address 4294967292"):  # a[-1]: byte -4
        reference(path, args={"a": [1, 2, 3, 4], "n": -1})
    # inside the machine's memory (past the array but below word 126): no fault
    res = reference(path, args={"a": [1, 2, 3, 4], "n": 122})
    assert res.outputs["a"] == [1, 2, 3, 4]


@needs_clang
def test_misaligned_address_faults(tmp_path):
    path = cu(tmp_path, "__global__ void mis(int *a) { *(int *)((char *)a + 2 + 4 * threadIdx.x) = 5; }\n")
    with pytest.raises(MemoryFault, match="address 2 is not a multiple of 4"):
        reference(path, args={"a": [1, 2, 3, 4]})


# --------------------------------------------------------------------------- tools missing


@needs_clang
def test_qwengpu_clang_pointing_nowhere(tmp_path, monkeypatch):
    path = cu(tmp_path, INC)
    bogus = str(tmp_path / "no-such-clang")
    msg = cli_error("run", path, "--arg", "a=1", "--arg", "n=1", env={"QWENGPU_CLANG": bogus})
    assert "QWENGPU_CLANG" in msg and "no-such-clang" in msg
    assert "apt-get install clang" in msg or "brew install llvm" in msg
    monkeypatch.setenv("QWENGPU_CLANG", bogus)
    with pytest.raises(ClangNotFound) as ei:
        compile_kernel(path)
    assert "apt-get" in str(ei.value) or "brew" in str(ei.value)
    assert isinstance(ei.value, FrontendError)


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS also looks in Homebrew's fixed paths")
def test_no_clang_on_path(tmp_path, monkeypatch):
    path = cu(tmp_path, INC)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.delenv("QWENGPU_CLANG", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(ClangNotFound) as ei:
        compile_kernel(path)
    msg = str(ei.value)
    assert "clang was not found" in msg and "apt-get install clang" in msg
    env = {"PATH": str(empty), "QWENGPU_CLANG": ""}
    msg = cli_error("run", path, "--arg", "a=1", "--arg", "n=1", env=env)
    assert "clang was not found" in msg and "apt-get" in msg


def test_qwengpu_nvcc_pointing_nowhere(tmp_path, monkeypatch):
    path = cu(tmp_path, INC)
    monkeypatch.setenv("QWENGPU_NVCC", str(tmp_path / "no-such-nvcc"))
    with pytest.raises(FrontendError, match="QWENGPU_NVCC"):
        compile_kernel(path, frontend="nvcc")


def test_every_error_class_is_a_qwengpu_error():
    for cls in (FrontendError, ClangNotFound, UnsupportedError, ResourceError, LaunchError,
                BarrierDeadlock, StepBudgetExceeded, MemoryFault):
        assert issubclass(cls, QwenGpuError)


@needs_clang
def test_exit_status_is_1_for_a_kernel_that_fails_and_2_for_usage(tmp_path):
    """As compilers do: a kernel that cannot compile or run, or a launch that fails, exits 1;
    a wrong command line exits 2 (documented in the README's Command line section)."""
    good = cu(tmp_path, "__global__ void k(int *a) { a[threadIdx.x] += 1; }\n", "good.cu")
    double = cu(tmp_path, "__global__ void k(int *a) { a[threadIdx.x] = a[threadIdx.x] * 0.5; }\n", "d.cu")
    broken = cu(tmp_path, "__global__ void k(int *a) { a[threadIdx.x] = ; }\n", "broken.cu")
    far = cu(tmp_path, "__global__ void k(int *a, int i) { a[i] = 1; }\n", "far.cu")
    cases = {
        1: [("run", double, "--arg", "a=1,2,3,4", "--backend", "reference"),  # unsupported: a double
            ("run", broken, "--arg", "a=1,2,3,4", "--backend", "reference"),  # clang's syntax error
            ("run", far, "--arg", "a=1,2,3,4", "--arg", "i=5000", "--backend", "reference"),  # memory fault
            ("run", tmp_path / "none.cu", "--arg", "a=1")],  # no such source file (as clang: 1)
        2: [("run", good, "--backend", "reference"),  # missing --arg
            ("run", good, "--arg", "a=1,x", "--backend", "reference"),  # ill-formed value
            ("run", good, "--arg", "a=1,2,3,4", "--backend", "reference", "--check")],  # refused combination
    }
    for status, runs in cases.items():
        for argv in runs:
            proc = cli(*argv)
            assert proc.returncode == status, (argv, proc.returncode, proc.stderr)
            assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
