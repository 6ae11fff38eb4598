"""Every refusal names the user's own ``.cu`` line: never a header's, never only a PTX line.

A set of kernels the machine cannot run as written, each with the line its refusal
must name, found in the kernel's text (the line holding the construct; the
``__global__`` line for what is about the whole kernel: its memory, threads, registers,
ROM), never taken from the PTX or the message. Where the large machine would run the
kernel the refusal says so (``--machine large``) with the large machine's size; where it
would not, it does not offer it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from qwengpu_mlx.core.errors import QwenGpuError
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE, LARGE_MACHINE

from tests.support.cli import cu, needs_clang
from tests.support.launching import reference

pytestmark = needs_clang
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kernels"


@dataclass
class Refused:
    name: str
    code: str
    needle: str  # the text on the line the refusal must name
    args: dict
    launch: dict = field(default_factory=dict)  # block, grid, shared, machine
    says: tuple[str, ...] = ()  # what the message must also hold (the construct, the way around)
    never: tuple[str, ...] = ()  # what it must not (a machine that would not help)


ONE_INT = "__global__ void {name}(int* out) {{\n    out[threadIdx.x] = {expr};\n}}\n"

REFUSED = [
    Refused("double_math", """\
__global__ void double_math(int* out, int n) {
    int i = threadIdx.x;
    double f = (double)n * 1.5;
    out[i] = (int)f;
}
""", "1.5", {"out": [0] * 4, "n": 3}, says=("double", "use float")),
    Refused("clock_read", """\
__global__ void clock_read(int* out) {
    int t = threadIdx.x;
    out[t] = (int)__nvvm_read_ptx_sreg_clock();
}
""", "sreg_clock", {"out": [0] * 4}, says=("%clock",)),
    Refused("wide_load", """\
__global__ void wide_load(long long* out, int n) {
    int t = threadIdx.x;
    out[t] = out[t] * (long long)n;
}
""", "long long)n", {"out": [1, 2, 3, 4], "n": 3}, says=("64-bit",)),
    Refused("device_global", """\
__device__ int counter;

__global__ void device_global(int* out) {
    out[threadIdx.x] = counter;
}
""", "__device__ int counter", {"out": [0] * 4}, says=("__device__ global variable", "kernel parameters")),
    Refused("local_array", """\
__global__ void local_array(int* out, int k) {
    int buf[8];
    for (int i = 0; i < 8; i++) buf[i] = out[i] * 3;
    out[threadIdx.x] = buf[k & 7];
}
""", "__global__", {"out": list(range(8)), "k": 3}, says=(".local", "local array")),
    Refused("extern_unsized", """\
__global__ void extern_unsized(int* out) {
    extern __shared__ int s[];
    s[threadIdx.x] = out[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[0];
}
""", "extern __shared__", {"out": [0] * 4}, says=("extern __shared__ s[]", "--shared BYTES")),
    Refused("shared_too_big", """\
__global__ void shared_too_big(int* out) {
    __shared__ int s[200];
    s[threadIdx.x] = out[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[3];
}
""", "__global__", {"out": [0] * 4}, says=("204 memory words", "--machine large", "1,024 memory words")),
    Refused("shared_beyond_large", """\
__global__ void shared_beyond_large(int* out) {
    __shared__ int s[2000];
    s[threadIdx.x] = out[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[3];
}
""", "__global__", {"out": [0] * 4}, says=("2004 memory words",), never=("--machine large",)),
    Refused("dynamic_too_big", """\
__global__ void dynamic_too_big(int* out) {
    extern __shared__ int s[];
    s[threadIdx.x] = out[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[3];
}
""", "__global__", {"out": [0] * 4}, {"shared": 600},
        says=("154 memory words", "--machine large", "1,024 memory words")),
    Refused("arrays_too_long", ONE_INT.format(name="arrays_too_long", expr="1"), "__global__",
            {"out": [0] * 200}, says=("200 memory words", "--machine large", "1,024 memory words")),
    Refused("block_too_big", ONE_INT.format(name="block_too_big", expr="2"), "__global__",
            {"out": [0] * 32}, {"block": 32}, says=("blockDim.x = 32", "--machine large", "up to 32 threads")),
    Refused("block_2d_too_big", ONE_INT.format(name="block_2d_too_big", expr="3"), "__global__",
            {"out": [0] * 32}, {"block": (8, 4)}, says=("blockDim (8, 4, 1) is 32 threads", "--machine large")),
    Refused("block_beyond_large", ONE_INT.format(name="block_beyond_large", expr="4"), "__global__",
            {"out": [0] * 64}, {"block": (8, 8), "machine": LARGE_MACHINE}, says=("64 threads",),
            never=("--machine large",)),
    Refused("too_many_registers", """\
__global__ void too_many_registers(int *a) {
    int t = threadIdx.x;
    int v0=a[t],v1=a[t+1],v2=a[t+2],v3=a[t+3],v4=a[t+4],v5=a[t+5],v6=a[t+6],v7=a[t+7],v8=a[t+8],v9=a[t+9];
    int w0=a[t+10],w1=a[t+11],w2=a[t+12],w3=a[t+13],w4=a[t+14],w5=a[t+15],w6=a[t+16],w7=a[t+17];
    __syncthreads();
    a[t] = v0*v1+v2*v3+v4*v5+v6*v7+v8*v9+w0*w1+w2*w3+w4*w5+w6*w7 + v0*w7 + v1*w6 + v2*w5;
}
""", "__global__", {"a": list(range(30))}, says=("registers per lane", "keep fewer values live"),
        never=("this needs --machine large",)),
    Refused("string_constant", """\
extern "C" __device__ int vprintf(const char*, const char*);
__global__ void string_constant(int* out) {
    vprintf("hi", 0);
    out[0] = 1;
}
""", "__global__", {"out": [0] * 4}, says=("initializer",)),
]


def _line(code: str, needle: str) -> int:
    [n] = [k for k, text in enumerate(code.splitlines(), 1) if needle in text]
    return n


def _refusal(tmp_path: Path, case: Refused) -> str:
    launch = {"block": 4, "grid": 1, "shared": 0, "machine": PUBLISHED_MACHINE, **case.launch}
    with pytest.raises(QwenGpuError) as e:
        reference(cu(tmp_path, case.code, f"{case.name}.cu"), args=case.args, **launch)
    return str(e.value)


@pytest.mark.parametrize("case", REFUSED, ids=[c.name for c in REFUSED])
def test_the_refusal_names_the_users_line(tmp_path, case):
    msg = _refusal(tmp_path, case)
    assert msg.startswith(f"{case.name}.cu:{_line(case.code, case.needle)}: "), msg
    assert ".h:" not in msg, msg  # never a header's line
    for text in case.says:
        assert text in msg, (text, msg)
    for text in case.never:
        assert text not in msg, (text, msg)


def test_the_rom_refusal_names_the_kernel_line_and_the_large_machine(tmp_path):
    """``long_program`` needs the large machine's ROM: on the default one it is refused at
    its ``__global__`` line in the words memory and threads use."""
    code = (EXAMPLES / "long_program.cu").read_text()
    spec = json.loads((EXAMPLES / "long_program.json").read_text())
    assert spec.get("machine") == "large"
    with pytest.raises(QwenGpuError) as e:
        reference(cu(tmp_path, code, "long_program.cu"), args=spec["args"], block=spec["block"], grid=spec["grid"])
    msg = str(e.value)
    assert msg.startswith(f"long_program.cu:{_line(code, '__global__')}: "), msg
    assert f"this needs --machine large, which has a ROM of {LARGE_MACHINE.rom_blocks} blocks" in msg
