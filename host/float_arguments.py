"""A ``float`` or ``float*`` parameter's launch value -> binary32 bit patterns.

The user gives decimals (``--arg x=1.5,-2.25,3e-3``, ``nan``, ``inf``, ``-0``), a launch
file numbers or those strings, the Python API numbers; each becomes the nearest float32's
bits (``core.float32``: one exact rounding from the decimal), which the machine's words
and registers hold. A value that is no number is refused naming the parameter.
"""

from __future__ import annotations

from qwengpu_mlx.core.errors import LaunchError
from qwengpu_mlx.core.float32 import float32_bits

from qwengpu_mlx.host.signature import KernelParam


def float_argument(p: KernelParam, value) -> list[int] | int:
    """``value`` for ``p`` as bit patterns: a list for a pointer (at least one), one for a scalar."""
    items = [x for x in value.split(",") if x.strip() != ""] if isinstance(value, str) else \
        list(value) if isinstance(value, (list, tuple)) else [value]
    try:
        words = [float32_bits(x) for x in items]
    except ValueError as e:
        raise LaunchError(f"--arg {p.name}: {e} (`{p.name}` is {p.ctype.strip()}: give decimals such as "
                          f"1.5,-2.25,3e-3, or nan, inf, -inf)") from None
    if p.pointer:
        if not words:
            raise LaunchError(f"--arg {p.name}: pointer parameter `{p.name}` needs at least one value")
        return words
    if len(words) != 1:
        raise LaunchError(f"--arg {p.name}: `{p.name}` is a scalar ({p.ctype.strip()}); give one number")
    return words[0]
