"""read_memory against words written dual-rail by hand: the words, the zeros of columns
never written, and the smallest rail gap as a fraction of its column's level."""

import numpy as np
import pytest

from qwengpu_mlx.core.machine import LARGE_MACHINE, PUBLISHED_MACHINE
from qwengpu_mlx.core.readout import read_memory


class HeadStates:
    """A runner's read-out interface over given [Dv, Dk] states, one per memory head."""

    def __init__(self, states):
        self.states = states
        self.memory_heads = [(0, h) for h in range(len(states))]

    def recurrent_state(self, layer, head):
        return self.states[head]


def dual_rail(states, rows, word_index, value, bits, level):
    """Write ``value`` into its word's column: row 2i holds bit i, row 2i+1 its complement."""
    col = states[word_index // rows][:, word_index % rows]
    for i in range(bits):
        bit = (value >> i) & 1
        col[2 * i], col[2 * i + 1] = level * bit, level * (1 - bit)


@pytest.mark.parametrize("machine", [PUBLISHED_MACHINE, LARGE_MACHINE], ids=["published", "large"])
def test_words_zeros_and_margin(machine):
    rows = 128 if machine.mem_words > 128 else machine.mem_words
    heads = -(-machine.mem_words // rows)
    states = [np.zeros((2 * machine.word_bits + 2, rows), np.float32) for _ in range(heads)]
    rng = np.random.default_rng(7)
    written = {int(w): int(rng.integers(0, 2 ** 32)) for w in rng.choice(machine.mem_words, 40, replace=False)}
    written[machine.mem_words - 1] = 0xFFFFFFFF
    for w, v in written.items():
        dual_rail(states, rows, w, v, machine.word_bits, level=2.0)
    # one rail pair brought to a gap of 0.5 at level 2.0: the smallest margin, 0.25
    w = next(iter(written))
    col = states[w // rows][:, w % rows]
    col[6], col[7] = (1.25, 0.75) if (written[w] >> 3) & 1 else (0.75, 1.25)
    words, margin = read_memory(HeadStates(states), machine)
    assert words == [written.get(i, 0) for i in range(machine.mem_words)]
    assert margin == pytest.approx(0.25)


def test_nothing_written_reads_zeros_with_a_full_margin():
    states = [np.zeros((66, PUBLISHED_MACHINE.mem_words), np.float32)]
    assert read_memory(HeadStates(states), PUBLISHED_MACHINE) == ([0] * PUBLISHED_MACHINE.mem_words, 1.0)
