"""``.f32`` arithmetic and comparison (``add``, ``sub``, ``mul``, ``fma``, ``neg``, ``abs``,
``min``, ``max``, ``setp``) -> IR routines of integer instructions.

Empty until the routines land: every opcode here is refused by ``translate_float``.
"""

from __future__ import annotations

ARITH_OPS: dict = {}
"""PTX opcode -> handler ``(tr, ins) -> IR items``."""
