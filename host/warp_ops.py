"""The host's part of 32-lane CUDA warps (the routines themselves are ``prelude_warps.h``).

To a kernel a warp is 32 lanes and, since a thread block here holds at most 32 threads,
the warp is the thread block: a lane is the thread's linear index in the block and the
warp index is 0. :func:`warp_special` reads PTX's ``%laneid``/``%warpid`` that way (the
machine's own ``laneid``/``warpid`` are its 4-lane warps', which no kernel sees).

The machine's ``shfl`` is a 4-lane shuffle. The prelude uses it only where it gives the
32-lane result, in the 4-lane encoding (2-bit clamp and segment fields, member mask
``0xf``); :func:`check_hardware_shuffle` refuses any other ``shfl.sync`` (nvcc's headers,
inline asm), whose 32-lane meaning the 4-lane instruction would not give.
"""

from __future__ import annotations

from qwengpu_mlx.core.errors import UnsupportedError
from qwengpu_mlx.core.isa import Imm, Special

from qwengpu_mlx.host.srcloc import source_error

HARDWARE_MEMBER_MASK = 0xF  # the prelude's mark of a 4-lane hardware shuffle
HARDWARE_FIELDS = 0x303  # c's clamp (bits 0-1) and segment mask (bits 8-9), 2 bits each


def warp_special(s):
    """An operand with PTX's ``%laneid``/``%warpid`` read as a 32-lane warp's: the linear
    thread index and 0 (every other operand unchanged)."""
    if isinstance(s, Special):
        if s.name == "laneid":
            return Special("tid.x")
        if s.name == "warpid":
            return Imm(0)
    return s


def check_hardware_shuffle(it) -> None:
    """Refuse a ``shfl`` that is not the prelude's 4-lane one (its clamp and member mask are
    constants by now), naming the user's line."""
    c, member = it.srcs[2], it.srcs[3]
    if not (isinstance(c, Imm) and isinstance(member, Imm)):
        raise source_error(UnsupportedError, it.line, it.src, f"`{it.text.strip()}`: shfl's "
                           f"clamp and member mask must be constants")
    if member.value != HARDWARE_MEMBER_MASK or c.value & ~HARDWARE_FIELDS:
        raise source_error(UnsupportedError, it.line, it.src, f"`{it.text.strip()}`: a 32-lane shfl.sync "
                           f"written in PTX (inline asm, or nvcc's headers) is not supported; call "
                           f"__shfl_sync/__shfl_up_sync/__shfl_down_sync/__shfl_xor_sync with the clang "
                           f"front end, whose prelude gives them a 32-lane warp's results")
