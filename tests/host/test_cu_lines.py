"""Kernel errors name the user's ``.cu`` line.

clang compiles with ``-gline-tables-only``; the parser reads ``.loc``/``.file`` into each
instruction, and every lowering and validation error leads with ``file.cu:LINE``, the PTX
line kept as detail. Expected lines come from the source text (the line holding the
construct), never from the PTX. Where clang rewrote the code (a float constant, a loop
turned into a closed formula, ``atomicAdd(p, 0)``), the message says so and the way
around it is run to prove it works.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from qwengpu_mlx.core.errors import InvalidPtx, UnsupportedError
from qwengpu_mlx.host import frontend
from qwengpu_mlx.host.launch import bind, compile_kernel
from tests.support.launching import reference
from qwengpu_mlx.host.ptx_ast import PtxInstr
from qwengpu_mlx.host.ptx_parser import parse_ptx

from tests.support.cli import REPO, cu, needs_clang


def line_of(code: str, needle: str) -> int:
    """The 1-based line of ``needle`` in the source: the oracle for the line an error names."""
    [n] = [k for k, text in enumerate(code.splitlines(), 1) if needle in text]
    return n


def lowering_error(tmp_path: Path, code: str, name: str, args: dict) -> str:
    ck = compile_kernel(cu(tmp_path, code, name))
    with pytest.raises(UnsupportedError) as e:
        bind(ck, args)
    return str(e.value)


DOUBLE = """\
__global__ void scale(int* out, int n) {
    int i = threadIdx.x;
    double f = (double)n * 1.5;
    out[i] = (int)f;
}
"""

LOOP = """\
__global__ void squares(int* out, int n) {
    int s = 0;
    for (int k = 0; k < n; k++) {
        s += k * k;
        BARRIER
    }
    out[threadIdx.x] = s;
}
"""

ATOMIC_ZERO = """\
__global__ void peek(int* out) {
    int i = threadIdx.x;
    int v = READ;
    out[i + 1] = v;
}
"""


@needs_clang
def test_double_constant_names_the_cu_line(tmp_path):
    with pytest.raises(UnsupportedError) as e:
        compile_kernel(cu(tmp_path, DOUBLE, "scale.cu"))
    msg = str(e.value)
    assert msg.startswith(f"scale.cu:{line_of(DOUBLE, '1.5')}: PTX line "), msg
    assert "only 32-bit float constants" in msg and "1.5f, not 1.5" in msg
    assert e.value.source == f"scale.cu:{line_of(DOUBLE, '1.5')}" and e.value.ptx_line > 0


@needs_clang
def test_closed_form_loop_runs_as_the_loop_would(tmp_path):
    """clang rewrites the sum of squares into a 64-bit closed formula; it runs on pairs of
    words and gives what the loop gives, as does the loop kept a loop by an empty asm."""
    n = 7
    for name, barrier in (("squares.cu", ""), ("squares2.cu", 'asm volatile("" : "+r"(s));')):
        r = reference(cu(tmp_path, LOOP.replace("BARRIER", barrier), name), args={"out": [0] * 4, "n": n})
        assert r.outputs["out"] == [sum(k * k for k in range(n))] * 4


@needs_clang
def test_atomic_add_of_zero_reads_the_word(tmp_path):
    """clang turns ``atomicAdd(p, 0)`` (which only reads) into an atomic ``or`` with 0: it runs."""
    code = ATOMIC_ZERO.replace("READ", "atomicAdd(out, 0)")
    r = reference(cu(tmp_path, code, "peek.cu"), args={"out": [9, 0, 0, 0, 0]})
    assert r.outputs["out"] == [9, 9, 9, 9, 9]


def _ptx(source: Path, debug: str | None) -> str:
    cmd = frontend.clang_command(frontend.find_clang(), source)
    cmd = [c for c in cmd if c != "-gline-tables-only"] + ([debug] if debug else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return proc.stdout


def _stream(ptx: str) -> list:
    return [(i.opcode, i.mods, i.operands, i.guard)
            for k in parse_ptx(ptx).kernels for i in k.body if isinstance(i, PtxInstr)]


@needs_clang
@pytest.mark.parametrize("name", ["vec_add", "reduce_shared_tree"])
def test_line_tables_leave_the_code_as_it_was(name):
    """Same instructions with no debug flag, -gline-tables-only and full -g (whose
    .debug_* sections the parser skips); the lowered program is the same too."""
    src = REPO / "examples" / "kernels" / f"{name}.cu"
    plain = _ptx(src, None)
    assert ".loc" not in plain
    for flag in ("-gline-tables-only", "-g"):
        assert _stream(_ptx(src, flag)) == _stream(plain), flag
    ck = compile_kernel(src)
    assert ".loc" in ck.ptx
    args = {p.name: ([0] * 8 if p.pointer else 3) for p in ck.params}
    from qwengpu_mlx.host.launch import CompiledKernel
    from qwengpu_mlx.host.frontend import select_kernel

    m = parse_ptx(plain)
    bare = CompiledKernel(src, plain, m, select_kernel(m, None), ck.params)
    assert bind(bare, args, block=8).blocks == bind(ck, args, block=8).blocks


HAND_PTX = """\
.version 7.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
\t.reg .b32 %r<3>;
\t.reg .b64 %rd<3>;
\t.loc 1 7 3
\tmov.u32 %r1, %tid.x;
\t.loc 2 40 1, function_name $L__info_string0, inlined_at 1 9 5
\tmov.u32 %r2, %r1;
\t.loc 1 0 3
\tmov.u32 %r2, %r1;
\t.loc 1 12 3
\tadd.u32 %r2, %r1, %r9;
\tret;
}
\t.section .debug_info { .b32 5 .b8 2 }
\t.file 1 "/home/me/src/my kernel.cu"
\t.file 2 "/usr/include/helper.h"
"""


def test_loc_entries_inlined_at_and_line_zero():
    k = parse_ptx(HAND_PTX).kernels[0]
    srcs = [str(i.src) if i.src else None for i in k.body if isinstance(i, PtxInstr)]
    assert srcs == ["my kernel.cu:7", "my kernel.cu:9", None, "my kernel.cu:12", "my kernel.cu:12"]


def test_validation_error_names_the_cu_line():
    from qwengpu_mlx.host.validate import validate_kernel

    m = parse_ptx(HAND_PTX)
    with pytest.raises(InvalidPtx) as e:
        validate_kernel(m, m.kernels[0])
    assert str(e.value).startswith("my kernel.cu:12: PTX line 15: `add.u32 %r2, %r1, %r9;`"), str(e.value)
