"""``.f32`` data movement and conversion (``ld``, ``st``, ``mov``, ``selp``, ``cvt``) -> IR.

Empty until the movement lands: every opcode here is refused by ``translate_float``.
"""

from __future__ import annotations

MOVE_OPS: dict = {}
"""PTX opcode -> handler ``(tr, ins) -> IR items``."""
