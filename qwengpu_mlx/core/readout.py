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
    column never written reads as all zeros: the word is 0. All words are read at once
    (the large machine's 1,024 one by one took 5 ms, more than a short launch's tokens).
    """
    states = [runner.recurrent_state(layer, head) for layer, head in runner.memory_heads]  # each [Dv, Dk]
    cols = np.concatenate([np.asarray(s, np.float32) for s in states], axis=1)[:, :machine.mem_words]
    level = np.max(np.abs(cols), axis=0)
    b, nb = cols[0:2 * machine.word_bits:2], cols[1:2 * machine.word_bits:2]
    weights = np.left_shift(np.uint64(1), np.arange(machine.word_bits, dtype=np.uint64))
    written = level > 0.0  # a column never written reads as all zeros: the word is 0
    words = np.where(written, (b > nb).astype(np.uint64).T @ weights, 0)
    gaps = np.min(np.abs(b - nb), axis=0)  # a float32 gap over a float32 level, as one word's read gives
    worst = min(1.0, float(np.min(gaps[written] / level[written]))) if written.any() else 1.0
    return [int(w) for w in words], worst
