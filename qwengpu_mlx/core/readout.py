"""Reading results out of the recurrent state: memory words, dual-rail, with margins."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qwengpu_mlx.core.isa import ArrayBinding, Program
from qwengpu_mlx.core.machine import MachineConfig, to_signed


@dataclass
class NarrowArray(ArrayBinding):
    """A ``char``/``short`` array parameter: one element per memory word, its low ``bits``
    bits (the host's layout, ``host/narrow_memory.py``), read as its C type's values."""

    bits: int = 8
    signed: bool = True


def element_value(array: ArrayBinding, word: int) -> int:
    """One element's value: a word as a signed 32-bit integer, a narrow element as its type."""
    bits = getattr(array, "bits", 32)
    if bits >= 32:
        return to_signed(word)
    v = word & ((1 << bits) - 1)
    return v - (1 << bits) if getattr(array, "signed", True) and v >> (bits - 1) else v


def read_outputs(program: Program, memory: list[int]) -> dict[str, list[int]]:
    """Every pointer parameter's array after the launch: signed 32-bit integers, or a
    ``char``/``short`` array's elements as its type (``unsigned char`` 0..255, ...)."""
    return {a.name: [element_value(a, memory[a.base + i]) for i in range(a.length)] for a in program.arrays}


def read_memory(runner, machine: MachineConfig) -> tuple[list[int], float]:
    """Every memory word from the memory head's state, and the smallest bit margin.

    The words fill the memory heads in order, a head's key rows each (``runner.memory_heads``).
    Column c of head j's state is word ``j * rows + c``, stored dual-rail (rows 2i and 2i+1
    hold bit i and its complement), so a bit is read as which rail is larger; the margin is
    the gap between the rails as a fraction of the column's level (1.0 is perfect). A
    column never written reads as all zeros: the word is 0.
    """
    states = [runner.recurrent_state(layer, head) for layer, head in runner.memory_heads]  # each [Dv, Dk]
    rows = states[0].shape[1]
    words, worst = [], 1.0
    for w in range(machine.mem_words):
        col = states[w // rows][:, w % rows]
        level = float(np.max(np.abs(col))) if np.any(col) else 0.0
        if level == 0.0:
            words.append(0)
            continue
        b, nb = col[0:2 * machine.word_bits:2], col[1:2 * machine.word_bits:2]
        bits = (b > nb).astype(int)
        worst = min(worst, float(np.min(np.abs(b - nb)) / level))
        words.append(int(sum(int(x) << i for i, x in enumerate(bits))))
    return words, worst
