"""``.f32`` instructions -> IR: the translation's float family, as routines of integer
instructions.

The machine's registers and memory words are 32-bit patterns; a float is its IEEE-754
binary32 bit pattern in one of them. Data movement (``ld``, ``st``, ``mov``, ``selp``,
bit casts) moves the pattern as it is; arithmetic, comparison and conversion expand into
routines of the machine's integer instructions (the model runs them step by step; the
host never computes a kernel's float). Each family keeps its handlers in its own table:
``translate_float_move.MOVE_OPS`` (movement and conversion) and
``translate_float_arith.ARITH_OPS`` (arithmetic and comparison), and the float atomic
add is ``translate_atomics_float``'s; any other opcode is refused at the user's line.
"""

from __future__ import annotations

from qwengpu_mlx.host.translate_atomics_float import op_atom_float, op_red_float
from qwengpu_mlx.host.translate_float_arith import ARITH_OPS
from qwengpu_mlx.host.translate_float_move import MOVE_OPS
from qwengpu_mlx.host.translate_types import unsupported

FLOAT_OPS = {**MOVE_OPS, **ARITH_OPS, "atom": op_atom_float, "red": op_red_float}
"""PTX opcode (``add``, ``ld``, ...) -> handler ``(tr, ins) -> IR items`` for ``.f32``."""


def float_instr(tr, ins) -> list:
    """Translate one instruction that names ``.f32`` (other float widths are refused)."""
    for m in ins.mods:
        if m in ("f16", "f16x2", "bf16", "bf16x2", "f64", "tf32"):
            raise unsupported(ins, f"floating-point type .{m}: only 32-bit float (.f32) is supported; "
                                   f"use float, not double or half")
    handler = FLOAT_OPS.get(ins.opcode)
    if handler is None:
        raise unsupported(ins, f"floating-point instruction `{ins.opcode}{''.join('.' + m for m in ins.mods)}` "
                               f"is not supported (float loads, stores, moves, selections and bit casts are); "
                               f"compute it in integers, e.g. on the float's bits with __float_as_int")
    return handler(tr, ins)
