"""A run's peak memory, named by what measures it.

mlx-lm reports MLX's allocator peak (``mx.get_peak_memory``): the arrays MLX allocated.
A kernel's launch on the CPU runs the native token step, which keeps its circuit in
NumPy and C and allocates no MLX array, so that figure is 0 there. What a user wants to
know, how much memory the run took, is the process's peak resident set (``getrusage``);
MLX's figure is kept beside it, under its own name, for the runs that do use MLX (the
GPU's recurrence, whose arrays on a Mac's unified memory a resident figure may not count).
"""

from __future__ import annotations

import resource
import sys
from dataclasses import dataclass

import mlx.core as mx

GB = 1e9


@dataclass(frozen=True)
class PeakMemory:
    """The process's peak resident memory and MLX's allocator peak, in GB."""

    resident_gb: float
    mlx_gb: float

    def line(self) -> str:
        """mlx-lm's summary line, saying what each figure measures."""
        return f"Peak memory: {self.resident_gb:.3f} GB resident (the process); MLX's arrays: {self.mlx_gb:.3f} GB"

    def figures(self) -> dict:
        """The JSON keys, rounded to the MB."""
        return {"peak_resident_gb": round(self.resident_gb, 3), "peak_mlx_gb": round(self.mlx_gb, 3)}


def resident_bytes(maxrss: int, platform: str) -> int:
    """``ru_maxrss`` in bytes: macOS counts it in bytes, Linux (and the other Unixes) in KiB."""
    return maxrss if platform == "darwin" else maxrss * 1024


def peak_memory() -> PeakMemory:
    """This process's peaks so far."""
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return PeakMemory(resident_bytes(maxrss, sys.platform) / GB, mx.get_peak_memory() / GB)
