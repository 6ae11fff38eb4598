"""The large machine's memory heads are exact zeros wherever no header or address names their part.

A step that runs only what ever held a non-zero (the native step) then never touches the
parts of memory a kernel does not use. Checked on the built plan by evaluating the gates
that make the keys and queries (threshold gates over bits) and the heads' own decoded
channels before their SiLU: what the meaning says, a ``MEM`` header for word a writes row
a mod 128 of the heads of part a div 128, a load of word a reads that row, and every other
channel of every memory head is exactly 0, not merely negative.
"""

from __future__ import annotations

import re

import pytest

from qwengpu_mlx.compiler.machine_circuit import build_circuit
from qwengpu_mlx.core.machine import LARGE_MACHINE
from qwengpu_mlx.core.vocab import vocab_for

ROWS = 128  # a head's key rows at the compact shape: words per memory part
WORDS = (0, 1, 77, 127, 128, 300, 511, 512, 777, 1023)


@pytest.fixture(scope="module")
def plan():
    return build_circuit(LARGE_MACHINE).plan


def _gates(plan, prefix: str) -> list:
    """The plan's gates whose names start with ``prefix``, in layer order."""
    return [g for lp in plan.layers if lp.mlp is not None for g in lp.mlp.gates if g.name.startswith(prefix)]


def _evaluate(gates, x: dict) -> dict:
    """x with every gate's outputs added: a gate fires where its weighted sum reaches theta."""
    x = dict(x)
    for g in gates:
        if sum(w * x.get(d, 0.0) for d, w in g.terms) >= g.theta:
            for d, w in g.outputs:
                x[d] = x.get(d, 0.0) + w
    return x


def _memory_heads(plan) -> dict:
    """(slot, lane, part) -> head, for every memory head."""
    heads = {}
    for lp in plan.layers:
        for h in (lp.mixer.heads if lp.mixer is not None else []):
            found = re.fullmatch(r"mem\.s(\d)\.lane(\d)(?:\.w(\d+))?", h.name)
            if found:
                s, lane, first = found.groups()
                heads[int(s), int(lane), int(first or 0) // ROWS] = h
    return heads


def _channels(terms, x: dict) -> dict:
    """Row -> its pre-SiLU sum (the head's weights times the dims' values)."""
    out: dict[int, float] = {}
    for term in terms:
        row, dim, w = term[0], term[1], term[-1]
        out[row] = out.get(row, 0.0) + w * x.get(dim, 0.0)
    return out


def _token_row(plan, token_id: int) -> dict:
    dims, E = plan.embedding_sparse
    return {int(d): float(v) for d, v in zip(dims, E[token_id]) if v != 0.0}


def test_every_reader_has_eight_parts_of_128_words(plan):
    heads = _memory_heads(plan)
    assert sorted({k[2] for k in heads}) == list(range(8))
    assert len(heads) == 3 * 4 * 8


def test_a_mem_header_keys_one_row_of_its_part_and_nothing_else(plan):
    vocab, heads, gates = vocab_for(LARGE_MACHINE), _memory_heads(plan), _gates(plan, "memkey")
    for item in (0, vocab.input_item):
        for a in WORDS:
            x = _evaluate(gates, _token_row(plan, vocab.id("MEM", item=item, addr=a)))
            for (s, lane, part), h in heads.items():
                ch = _channels(h.key_terms, x)
                if part == a // ROWS:
                    assert ch[a % ROWS] > 0 and all(v < 0 for r, v in ch.items() if r != a % ROWS)
                else:
                    assert all(v == 0.0 for v in ch.values()), (h.name, a)


def test_no_other_token_keys_any_memory_channel(plan):
    vocab, heads, gates = vocab_for(LARGE_MACHINE), _memory_heads(plan), _gates(plan, "memkey")
    others = [vocab.id("C0", value=2047), vocab.id("C1", value=5), vocab.id("EXEC", block=100, warp=7, mask=15),
              vocab.id("VAL", slot=2, lane=3), vocab.id("PROG", block=127, piece=3), vocab.id("GO"),
              vocab.id("ENT", item=0, warp=5, level=2), vocab.id("STOP")]
    for tid in others:
        x = _evaluate(gates, _token_row(plan, tid))
        for h in heads.values():
            assert all(v == 0.0 for v in _channels(h.key_terms, x).values()), (h.name, vocab[tid])


@pytest.mark.parametrize("valid,aligned", [(1, 1), (0, 1), (1, 0)])
def test_an_address_queries_one_row_of_its_part_and_nothing_else(plan, valid, aligned):
    lay, heads = plan.layout, _memory_heads(plan)
    for s, lane in ((0, 0), (2, 3)):
        gates = _gates(plan, f"memq.s{s}l{lane}.")
        word = lay.spaces[f"memw.s{s}.lane{lane}"]
        for a in WORDS:
            x = {d: 1.0 for i, d in enumerate(word.dims) if a >> i & 1}
            x[lay.spaces[f"memok.s{s}.lane{lane}"][0]] = valid
            x[lay.spaces[f"memal.s{s}.lane{lane}"][0]] = aligned
            x = _evaluate(gates, x)
            for part in range(8):
                ch = _channels(heads[s, lane, part].query_terms, x)
                if valid and aligned and part == a // ROWS:
                    assert ch[a % ROWS] > 0 and all(v < 0 for r, v in ch.items() if r != a % ROWS)
                else:
                    assert all(v == 0.0 for v in ch.values()), (s, lane, part, a)
