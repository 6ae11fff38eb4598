"""``.f32`` data movement and conversion (``ld``, ``st``, ``mov``, ``selp``, ``cvt``) -> IR.

A float is its IEEE-754 binary32 bit pattern in a 32-bit register or memory word, so a
load, store, move or selection of a float is the integer instruction on those 32 bits:
the same handlers as ``b32``'s (``translate_memory``, ``translate_convert``,
``translate_alu``), which read a ``.f32`` instruction's type as ``b32``. A float
immediate arrives as its bit pattern (``0f3FC00000`` is 1.5f; ``ptx_parser``). A
conversion that rounds is a routine of integer instructions (``float_convert``; from a 64-bit
integer, ``float_convert_wide``).
"""

from __future__ import annotations

from qwengpu_mlx.host import translate_alu as alu
from qwengpu_mlx.host import translate_convert as convert
from qwengpu_mlx.host import translate_memory as memory
from qwengpu_mlx.host.float_convert import op_cvt_float
from qwengpu_mlx.host.float_convert_wide import (is_float_to_wide, is_wide_to_float, op_cvt_float_to_wide,
                                                 op_cvt_wide_to_float)


def op_cvt(tr, ins) -> list:
    """A float conversion: to or from a 64-bit integer's pair (``float_convert_wide``), else ``float_convert``."""
    if is_wide_to_float(ins):
        return op_cvt_wide_to_float(tr, ins)
    if is_float_to_wide(ins):
        return op_cvt_float_to_wide(tr, ins)
    return op_cvt_float(tr, ins)


MOVE_OPS: dict = {
    "ld": memory.op_ld,
    "st": memory.op_st,
    "mov": convert.op_mov,
    "selp": alu.op_selp,
    "cvt": op_cvt,
}
"""PTX opcode -> handler ``(tr, ins) -> IR items``."""
