"""What the translation (``translate.py`` and its instruction families) shares: the PTX
integer types it tells apart, and its one error, naming the instruction."""

from __future__ import annotations

from qwengpu_mlx.core.errors import UnsupportedError

from qwengpu_mlx.host.ptx_ast import PtxInstr
from qwengpu_mlx.host.srcloc import source_error

M32 = 0xFFFFFFFF
INT_TYPES32 = {"s32", "u32", "b32"}
INT_TYPES64 = {"s64", "u64", "b64"}
SUBWORD = {"s8", "u8", "b8", "s16", "u16", "b16"}


def unsupported(ins: PtxInstr, why: str) -> UnsupportedError:
    """The error for one instruction: ``file.cu:LINE: PTX line N: `text`: why``."""
    return source_error(UnsupportedError, ins.line, ins.src, f"`{ins.text.strip()}`: {why}")
