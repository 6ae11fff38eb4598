"""PTX's bit instructions (``popc``, ``clz``, ``bfind``, ``brev``, ``prmt``, ``bfe``, ``sad``),
lowered to routines of machine instructions, against Python models of the PTX ISA's
definitions, on random and edge values (``tests/host/test_narrow.py``'s harness)."""

from __future__ import annotations

import pytest

from tests.host.test_narrow import _inputs, run_ptx

M32 = 0xFFFFFFFF


def s32(x: int) -> int:
    x &= M32
    return x - (1 << 32) if x >> 31 else x


def clz(x: int) -> int:
    return 32 - (x & M32).bit_length()


def brev(x: int) -> int:
    return int(f"{x & M32:032b}"[::-1], 2)


def prmt(a: int, b: int, c: int) -> int:
    """PTX prmt, default mode: byte i of d is byte c[4i+2:4i] of {b, a}, or its sign (c[4i+3])."""
    src = (a & M32) | ((b & M32) << 32)
    out = 0
    for i in range(4):
        nib = (c >> (4 * i)) & 0xF
        byte = (src >> (8 * (nib & 7))) & 0xFF
        if nib & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * i)
    return out


def bfe(a: int, pos: int, length: int, signed: bool) -> int:
    """PTX bfe.{u32,s32}: bits past bit 31 read as the sign bit (.s32) or zero (.u32)."""
    a &= M32
    if length == 0:
        return 0
    sbit = (a >> min(pos + length - 1, 31)) & 1 if signed else 0
    d = 0
    for i in range(32):
        bit = (a >> (pos + i)) & 1 if i < length and pos + i <= 31 else sbit
        d |= bit << i
    return d


def s24(x: int) -> int:
    x &= 0xFFFFFF
    return x - (1 << 24) if x >> 23 else x


def bfi(a: int, b: int, pos: int, length: int) -> int:
    """PTX bfi.b32: b with bits pos..pos+len-1 (none past bit 31) taken from a's low bits."""
    f = b & M32
    for i in range(length):
        if pos + i > 31:
            break
        f = (f & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
    return f


def bfind(x: int, signed: bool, shiftamt: bool) -> int:
    x &= M32
    if signed and x >> 31:
        x = ~x & M32
    if x == 0:
        return M32
    pos = x.bit_length() - 1
    return 31 - pos if shiftamt else pos


CASES = {
    "popc": ("popc.b32 %r4, %r2;", lambda a, b: bin(a).count("1")),
    "clz": ("clz.b32 %r4, %r2;", lambda a, b: clz(a)),
    "clz.small": ("and.b32 %r6, %r3, 31;\n  shr.u32 %r5, %r2, %r6;\n  clz.b32 %r4, %r5;",
                  lambda a, b: clz(a >> (b & 31))),
    "brev": ("brev.b32 %r4, %r2;", lambda a, b: brev(a)),
    "bfind.u32": ("bfind.u32 %r4, %r2;", lambda a, b: bfind(a, False, False)),
    "bfind.s32": ("bfind.s32 %r4, %r2;", lambda a, b: bfind(a, True, False)),
    "bfind.shiftamt.u32": ("bfind.shiftamt.u32 %r4, %r2;", lambda a, b: bfind(a, False, True)),
    "sad.s32": ("sad.s32 %r4, %r2, %r3, 7;", lambda a, b: abs(s32(a) - s32(b)) + 7),
    "sad.u32": ("sad.u32 %r4, %r2, %r3, %r2;", lambda a, b: abs(a - b) + a),
    "sad.s16": ("sad.s16 %rs3, %rs1, %rs2, 3;\n  cvt.u32.u16 %r4, %rs3;",
                lambda a, b: (abs(((a & 0xFFFF) ^ 0x8000) - ((b & 0xFFFF) ^ 0x8000)) + 3) & 0xFFFF),
}
CASES["mul24.lo.s32"] = ("mul24.lo.s32 %r4, %r2, %r3;",
                         lambda a, b: s24(a) * s24(b))
CASES["mul24.lo.u32"] = ("mul24.lo.u32 %r4, %r2, %r3;", lambda a, b: (a & 0xFFFFFF) * (b & 0xFFFFFF))
for _pos, _len in ((0, 8), (8, 8), (28, 8), (40, 3), (3, 0), (0, 32)):
    CASES[f"bfi.{_pos}.{_len}"] = (f"bfi.b32 %r4, %r2, %r3, {_pos}, {_len};",
                                   lambda a, b, p=_pos, n=_len: bfi(a, b, p, n))
for _sel in (0x3210, 0x0123, 0x5140, 0x7654, 0x1032, 0x4444, 0x89AB, 0xF3E1, 0x0000):
    CASES[f"prmt.{_sel:04x}"] = (f"prmt.b32 %r4, %r2, %r3, {_sel};",
                                 lambda a, b, c=_sel: prmt(a, b, c))
CASES["prmt.reg-selector"] = ("mov.u32 %r6, 29505;\n  prmt.b32 %r4, %r2, %r3, %r6;",
                              lambda a, b: prmt(a, b, 29505))
for _pos, _len in ((0, 8), (8, 8), (4, 12), (24, 8), (20, 20), (0, 32), (31, 1), (40, 3), (3, 0)):
    for _t in ("u32", "s32"):
        CASES[f"bfe.{_t}.{_pos}.{_len}"] = (f"bfe.{_t} %r4, %r2, {_pos}, {_len};",
                                            lambda a, b, p=_pos, n=_len, s=_t == "s32": bfe(a, p, n, s))


@pytest.mark.parametrize("name", sorted(CASES))
def test_bit_instruction_matches_ptx_definition(name):
    body, model = CASES[name]
    for seed in (3, 4):
        a, b = _inputs(seed * 1000 + len(name))
        assert run_ptx(body, a, b) == [model(x, y) & M32 for x, y in zip(a, b)], name
