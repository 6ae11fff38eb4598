"""``cvt`` with a ``.f32`` side -> routines of the machine's integer instructions.

Not yet lowered: every float conversion is refused at the user's line.
"""

from __future__ import annotations

from qwengpu_mlx.host.translate_types import unsupported


def op_cvt_float(tr, ins) -> list:
    """A conversion to, from or within ``.f32``."""
    raise unsupported(ins, f"float conversion `cvt{''.join('.' + m for m in ins.mods)}` is not supported yet; "
                           f"move the float's bits with __float_as_int/__int_as_float")
