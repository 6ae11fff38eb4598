"""8- and 16-bit PTX on the 32-bit machine, against a Python model of PTX's definitions.

Each case is a hand-written PTX kernel: two 32-bit inputs per thread are truncated to
16-bit registers by ``cvt.u16.u32`` (a move on this machine, so the registers' upper
bits hold garbage, the worst case of ``host/narrow.py``'s invariant), one narrow
instruction runs, and its result is widened to 32 bits and stored. The expected word
comes from the PTX ISA's definition of the instruction, written here in Python.
"""

from __future__ import annotations

import random

import pytest

from qwengpu_mlx.core.errors import LaunchError, UnsupportedError
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from qwengpu_mlx.core.readout import read_outputs
from qwengpu_mlx.host.launch import CompiledKernel, bind
from qwengpu_mlx.host.ptx_parser import parse_ptx
from qwengpu_mlx.host.signature import KernelParam
from tests.support.cli import cu, needs_clang
from tests.support.launching import reference, run_reference

M16, M32 = 0xFFFF, 0xFFFFFFFF
LANES = 16

HEAD = """
.version 6.3
.target sm_75
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 po)
{
  .reg .pred %p<3>;
  .reg .b16 %rs<8>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [po];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  add.s64 %rd7, %rd3, %rd4;
  ld.global.u32 %r2, [%rd5];
  ld.global.u32 %r3, [%rd6];
  cvt.u16.u32 %rs1, %r2;
  cvt.u16.u32 %rs2, %r3;
"""
TAIL = """
  st.global.u32 [%rd7], %r4;
  ret;
}
"""


def s16(x: int) -> int:
    x &= M16
    return x - 0x10000 if x >> 15 else x


def s8(x: int) -> int:
    x &= 0xFF
    return x - 0x100 if x >> 7 else x


def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def widen_u(body: str) -> str:
    return body + "\n  cvt.u32.u16 %r4, %rs3;"


def widen_s(body: str) -> str:
    return body + "\n  cvt.s32.s16 %r4, %rs3;"


# name -> (PTX body leaving the result in %r4, model(a32, b32) -> the stored word)
CASES = {
    "add.s16": (widen_s("add.s16 %rs3, %rs1, %rs2;"), lambda a, b: s16(a + b)),
    "sub.u16": (widen_u("sub.u16 %rs3, %rs1, %rs2;"), lambda a, b: (a - b) & M16),
    "mul.lo.s16": (widen_s("mul.lo.s16 %rs3, %rs1, %rs2;"), lambda a, b: s16(s16(a) * s16(b))),
    "mul.hi.s16": (widen_s("mul.hi.s16 %rs3, %rs1, %rs2;"), lambda a, b: s16((s16(a) * s16(b)) >> 16)),
    "mul.hi.u16": (widen_u("mul.hi.u16 %rs3, %rs1, %rs2;"), lambda a, b: ((a & M16) * (b & M16)) >> 16),
    "mul.hi.s16.imm": (widen_s("mul.hi.s16 %rs3, %rs1, -30583;"), lambda a, b: s16((s16(a) * -30583) >> 16)),
    "mul.wide.s16": ("mul.wide.s16 %r4, %rs1, %rs2;", lambda a, b: s16(a) * s16(b)),
    "mul.wide.u16": ("mul.wide.u16 %r4, %rs1, %rs2;", lambda a, b: (a & M16) * (b & M16)),
    "mad.lo.s16": (widen_s("mad.lo.s16 %rs3, %rs1, %rs2, %rs1;"), lambda a, b: s16(s16(a) * s16(b) + a)),
    "mad.wide.u16": ("mad.wide.u16 %r4, %rs1, %rs2, %r3;", lambda a, b: ((a & M16) * (b & M16) + b) & M32),
    "neg.s16": (widen_s("neg.s16 %rs3, %rs1;"), lambda a, b: s16(-a)),
    "abs.s16": (widen_s("abs.s16 %rs3, %rs1;"), lambda a, b: s16(abs(s16(a)))),
    "not.b16": (widen_u("not.b16 %rs3, %rs1;"), lambda a, b: ~a & M16),
    "and.b16": (widen_s("and.b16 %rs3, %rs1, %rs2;"), lambda a, b: s16(a & b)),
    "xor.b16": (widen_u("xor.b16 %rs3, %rs1, %rs2;"), lambda a, b: (a ^ b) & M16),
    "min.s16": (widen_s("min.s16 %rs3, %rs1, %rs2;"), lambda a, b: min(s16(a), s16(b))),
    "max.u16": (widen_u("max.u16 %rs3, %rs1, %rs2;"), lambda a, b: max(a & M16, b & M16)),
    "shl.b16": ("and.b32 %r5, %r3, 31;\n  shl.b16 %rs3, %rs1, %r5;\n  cvt.u32.u16 %r4, %rs3;",
                lambda a, b: (a << (b & 31)) & M16),
    "shr.u16": ("and.b32 %r5, %r3, 31;\n  shr.u16 %rs3, %rs1, %r5;\n  cvt.s32.s16 %r4, %rs3;",
                lambda a, b: s16((a & M16) >> (b & 31))),
    "shr.s16": ("and.b32 %r5, %r3, 31;\n  shr.s16 %rs3, %rs1, %r5;\n  cvt.u32.u16 %r4, %rs3;",
                lambda a, b: (s16(a) >> (b & 31)) & M16),
    "div.s16": (widen_s("or.b16 %rs4, %rs2, 1;\n  div.s16 %rs3, %rs1, %rs4;"),
                lambda a, b: s16(trunc_div(s16(a), s16(b | 1)))),
    "rem.s16": (widen_s("or.b16 %rs4, %rs2, 1;\n  rem.s16 %rs3, %rs1, %rs4;"),
                lambda a, b: s16(s16(a) - trunc_div(s16(a), s16(b | 1)) * s16(b | 1))),
    "div.u16": (widen_u("or.b16 %rs4, %rs2, 1;\n  div.u16 %rs3, %rs1, %rs4;"),
                lambda a, b: (a & M16) // ((b | 1) & M16)),
    "rem.u16": (widen_u("or.b16 %rs4, %rs2, 1;\n  rem.u16 %rs3, %rs1, %rs4;"),
                lambda a, b: (a & M16) % ((b | 1) & M16)),
    "setp.lt.s16": ("setp.lt.s16 %p1, %rs1, %rs2;\n  selp.u32 %r4, 1, 0, %p1;", lambda a, b: int(s16(a) < s16(b))),
    "setp.hi.u16": ("setp.gt.u16 %p1, %rs1, %rs2;\n  selp.u32 %r4, 1, 0, %p1;",
                    lambda a, b: int(a & M16 > b & M16)),
    "setp.ne.b16": ("setp.ne.b16 %p1, %rs1, %rs2;\n  selp.u32 %r4, 1, 0, %p1;", lambda a, b: int((a ^ b) & M16 != 0)),
    "selp.b16": ("setp.lt.u32 %p1, %r2, %r3;\n  selp.b16 %rs3, %rs1, %rs2, %p1;\n  cvt.s32.s16 %r4, %rs3;",
                 lambda a, b: s16(a if a < b else b)),
    "cvt.s32.s8": ("cvt.s32.s8 %r4, %rs1;", lambda a, b: s8(a)),
    "cvt.u32.u8": ("cvt.u32.u8 %r4, %rs1;", lambda a, b: a & 0xFF),
    "cvt.s16.s8": (widen_u("cvt.s16.s8 %rs3, %rs1;"), lambda a, b: s8(a) & M16),
    "cvt.u8.u16": (widen_u("cvt.u8.u16 %rs3, %rs1;"), lambda a, b: a & 0xFF),
    "cvt.s8.s32": ("cvt.s8.s32 %r4, %r2;", lambda a, b: s8(a)),
    "cvt.u16.u32.s32": ("cvt.u16.u32 %rs3, %r2;\n  cvt.s32.s16 %r4, %rs3;", lambda a, b: s16(a)),
    "cvt.s32.u16": ("cvt.s32.u16 %r4, %rs1;", lambda a, b: a & M16),
}


def _inputs(seed: int) -> tuple[list[int], list[int]]:
    rng = random.Random(seed)
    edge = [0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0xFFFF8000, 0x7FFFFFFF, 0x80000000, M32, 0x1234ABCD]
    a = [rng.choice(edge) if rng.random() < 0.4 else rng.getrandbits(32) for _ in range(LANES)]
    b = [rng.choice(edge) if rng.random() < 0.4 else rng.getrandbits(32) for _ in range(LANES)]
    return a, b


def run_ptx(body: str, a: list[int], b: list[int]) -> list[int]:
    text = HEAD + "  " + body + TAIL
    module = parse_ptx(text)
    kernel = module.kernels[0]
    params = [KernelParam(n, True, "unsigned *") for n in ("a", "b", "o")]
    ck = CompiledKernel(None, text, module, kernel, params)
    machine = PUBLISHED_MACHINE
    prog = bind(ck, {"a": a, "b": b, "o": [0] * len(a)}, block=len(a), machine=machine)
    run = run_reference(prog, machine)
    return [v & M32 for v in read_outputs(prog, run.memory)["o"]]


@pytest.mark.parametrize("name", sorted(CASES))
def test_narrow_instruction_matches_ptx_definition(name):
    body, model = CASES[name]
    for seed in (1, 2):
        a, b = _inputs(seed * 1000 + len(name))
        assert run_ptx(body, a, b) == [model(x, y) & M32 for x, y in zip(a, b)], name


# ----------------------------------------------------------------------------- from CUDA source

SECONDS = [0, 59, 3599, 3600, 45296, 86399, 100000, -3661, -1, 7261, 32767, -32768, 99, -100, 12345, 3601]


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_rem(a: int, b: int) -> int:
    return a - c_div(a, b) * b


@needs_clang
def test_code_clang_computes_in_16_and_8_bits_runs_exact(tmp_path):
    """``s % 3600 / 60`` (clang: ``mul.hi.s16``) and ``x % 100 / 10`` (``cvt.s16.s8``,
    ``mul.lo.s16``, ``shr.s16``) were refused; they run and give C's answers."""
    path = cu(tmp_path, "__global__ void k(const int *s, int *m, int *t) {\n"
                        "  int i = threadIdx.x;\n  m[i] = s[i] % 3600 / 60;\n  t[i] = s[i] % 100 / 10;\n}\n")
    run = reference(path, block=16, args={"s": SECONDS, "m": [0] * 16, "t": [0] * 16})
    assert run.outputs["m"] == [c_div(c_rem(v, 3600), 60) for v in SECONDS]
    assert run.outputs["t"] == [c_div(c_rem(v, 100), 10) for v in SECONDS]


@needs_clang
def test_unsigned_char_input_is_read_per_element(tmp_path):
    """An ``unsigned char*`` input used to fault (``ld address 1 is not a multiple of 4``)."""
    path = cu(tmp_path, "__global__ void k(const unsigned char *c, int *o) {\n"
                        "  o[threadIdx.x] = c[threadIdx.x] * 2 + c[threadIdx.x ^ 1];\n}\n")
    c = [1, 2, 255, 0, 128, 127, 9, 200]
    run = reference(path, block=8, args={"c": c, "o": [0] * 8})
    assert run.outputs == {"c": c, "o": [2 * c[i] + c[i ^ 1] for i in range(8)]}


@needs_clang
def test_char_array_read_as_ints_is_refused_at_the_users_line(tmp_path):
    path = cu(tmp_path, "__global__ void k(unsigned char *c, int *o) {\n"
                        "  o[0] = *(const int *)c;\n}\n")
    with pytest.raises(UnsupportedError) as e:
        reference(path, block=1, args={"c": [1, 2, 3, 4], "o": [0]})
    assert "kernel.cu:2" in str(e.value) and "element by element" in str(e.value)


@needs_clang
def test_an_element_value_outside_its_type_is_refused(tmp_path):
    path = cu(tmp_path, "__global__ void k(unsigned char *c) { c[threadIdx.x] += 1; }\n")
    with pytest.raises(LaunchError, match="does not fit in 8 bits"):
        reference(path, block=1, args={"c": [256]})


@needs_clang
def test_bytes_and_halves_of_an_int_array_read_little_endian(tmp_path):
    """Through a ``char*``/``short*`` cast an ``int`` array's bytes read as a GPU reads
    them (little-endian), at any byte offset; the word-aligned case stays one load."""
    path = cu(tmp_path, "__global__ void k(const int *a, int *o) {\n  int i = threadIdx.x;\n"
                        "  o[i] = ((const unsigned char *)a)[i] + 1000 * ((const signed char *)a)[i];\n"
                        "  o[i + 8] = ((const short *)a)[i];\n}\n")
    a = [0x04030201, 0x80FF7F00 - (1 << 32), -1, 0x12345678, 0, 0, 0, 0]
    raw = b"".join((v & M32).to_bytes(4, "little") for v in a)
    want = [raw[i] + 1000 * (raw[i] - 256 if raw[i] > 127 else raw[i]) for i in range(8)]
    want += [int.from_bytes(raw[2 * i: 2 * i + 2], "little", signed=True) for i in range(8)]
    assert reference(path, block=8, args={"a": a, "o": [0] * 16}).outputs["o"] == want


@needs_clang
def test_lanes_storing_neighbouring_bytes_in_one_step_each_keep_theirs(tmp_path):
    """The reason for one element per word: 16 lanes store bytes 0..15 of a char array
    (global and ``__shared__``) in the same step; a GPU keeps every byte."""
    path = cu(tmp_path, "__global__ void k(unsigned char *g, unsigned char *out) {\n"
                        "  __shared__ unsigned char s[16];\n  int i = threadIdx.x;\n"
                        "  g[i] = (unsigned char)(i * 17 + 3);\n  s[i] = (unsigned char)(255 - i);\n"
                        "  __syncthreads();\n  out[i] = s[15 - i];\n}\n")
    run = reference(path, block=16, args={"g": [0] * 16, "out": [0] * 16})
    assert run.outputs == {"g": [(i * 17 + 3) & 255 for i in range(16)], "out": [255 - (15 - i) for i in range(16)]}


@needs_clang
def test_an_atomic_on_a_char_array_is_refused_at_the_users_line(tmp_path):
    path = cu(tmp_path, "__global__ void k(unsigned char *c) {\n  atomicAdd((int *)c, 1);\n}\n")
    with pytest.raises(UnsupportedError) as e:
        reference(path, block=2, args={"c": [1, 2, 3, 4]})
    assert "kernel.cu:2" in str(e.value)


def test_an_address_of_unknown_array_is_refused_where_char_arrays_exist():
    """A byte address loaded from memory could point into a char array (an element per word)
    or an int array (packed bytes): the host cannot tell, so it refuses rather than guess."""
    text = HEAD.replace("ld.global.u32 %r3, [%rd6];", "ld.global.u8 %r3, [%rd6];\n  cvt.u64.u32 %rd8, %r2;") + \
        "  ld.global.u8 %rs3, [%rd8];\n  cvt.u32.u16 %r4, %rs3;" + TAIL
    module = parse_ptx(text)
    params = [KernelParam("a", True, "int *"), KernelParam("b", True, "unsigned char *", 8, False),
              KernelParam("o", True, "int *")]
    ck = CompiledKernel(None, text, module, module.kernels[0], params)
    with pytest.raises(UnsupportedError, match="cannot tell which array"):
        bind(ck, {"a": [1, 2], "b": [0, 0], "o": [0, 0]}, block=2)
