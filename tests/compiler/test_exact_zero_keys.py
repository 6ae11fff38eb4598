"""The large machine's memory and register heads are exact zeros where no header or address names their rows.

A step that runs only what ever held a non-zero (the native step) then never touches the
parts of memory a kernel does not use. Checked on the built plan by evaluating the gates
that make the keys and queries (threshold gates over bits) and the heads' own decoded
channels before their SiLU: what the meaning says, a ``MEM`` header for word a writes row
a mod 128 of the heads of part a div 128, a load of word a reads that row, and every other
channel of every memory head is exactly 0, not merely negative; a ``VAL``/``VALU`` header
keys only the written lanes' rows of the running warp; register and memory reads query
only at an ``EXEC`` pass (``fetch.exec_reads``), exact zeros at every other token.
"""

from __future__ import annotations

import re

import pytest

from qwengpu_mlx.compiler.machine_circuit import build_circuit
from qwengpu_mlx.core.encoding import SLOT_BITS, SLOT_FIELDS
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


@pytest.mark.parametrize("valid,aligned,exec_pass", [(1, 1, 1), (0, 1, 1), (1, 0, 1), (1, 1, 0)])
def test_an_address_queries_one_row_of_its_part_and_nothing_else(plan, valid, aligned, exec_pass):
    lay, heads = plan.layout, _memory_heads(plan)
    for s, lane in ((0, 0), (2, 3)):
        gates = _gates(plan, f"memq.s{s}l{lane}.")
        word = lay.spaces[f"memw.s{s}.lane{lane}"]
        for a in WORDS:
            x = {d: 1.0 for i, d in enumerate(word.dims) if a >> i & 1}
            x[lay.spaces[f"memok.s{s}.lane{lane}"][0]] = valid
            x[lay.spaces[f"memal.s{s}.lane{lane}"][0]] = aligned
            x[lay.spaces["exec.now"][0]] = exec_pass
            x = _evaluate(gates, x)
            for part in range(8):
                ch = _channels(heads[s, lane, part].query_terms, x)
                if valid and aligned and exec_pass and part == a // ROWS:
                    assert ch[a % ROWS] > 0 and all(v < 0 for r, v in ch.items() if r != a % ROWS)
                else:
                    assert all(v == 0.0 for v in ch.values()), (s, lane, part, a)


def _rom_dims(plan, heads: str = "rom") -> dict:
    """ROM bit position (piece * 32 + bit) -> the residual dim the ROM heads named ``heads``
    read it into (``rom``: the fetch's; ``rom.s1``: slot 1's own)."""
    dims = {}
    for lp in plan.layers:
        for h in (lp.mixer.heads if lp.mixer is not None else []):
            found = re.fullmatch(re.escape(heads) + r"\.piece(\d+)", h.name)
            if found:
                dims.update({int(found.group(1)) * 32 + bit: d for bit, d, _ in h.read_terms})
    return dims


def _register_heads(plan) -> dict:
    """lane -> its register heads (every slot and operand)."""
    heads: dict[int, list] = {}
    for lp in plan.layers:
        for h in (lp.mixer.heads if lp.mixer is not None else []):
            found = re.fullmatch(r"reg\.s\d\.[abcd]\.lane(\d)", h.name)
            if found:
                heads.setdefault(int(found.group(1)), []).append(h)
    return heads


def _context(plan, warp: int, mask: int, dsts: list[int]) -> dict:
    """The running warp and mask (the last EXEC's) and each slot's destination field (the ROM's)."""
    lay, rom = plan.layout, _rom_dims(plan)
    off, width = SLOT_FIELDS["dst"]
    x = {lay.spaces["ctx.warp"][warp]: 1.0}
    x.update({d: 1.0 for i, d in enumerate(lay.spaces["ctx.mask"].dims) if mask >> i & 1})
    for s, dst in enumerate(dsts):
        x.update({rom[s * SLOT_BITS + off + i]: 1.0 for i in range(width) if dst >> i & 1})
    return x


@pytest.mark.parametrize("warp", [0, 5, 7])
def test_a_val_header_keys_its_lanes_register_of_its_warp_and_nothing_else(plan, warp):
    vocab, heads, gates = vocab_for(LARGE_MACHINE), _register_heads(plan), _gates(plan, "regkey")
    R, mask, dsts = LARGE_MACHINE.regs, 0b1011, [9, 15, 1]
    headers = [(vocab.id("VAL", slot=s, lane=lane), s, {lane}) for s, lane in ((0, 0), (1, 2), (2, 3))]
    headers += [(vocab.id("VALU", slot=s), s, {j for j in range(4) if mask >> j & 1}) for s in (0, 2)]
    for tid, s, lanes in headers:
        x = _evaluate(gates, {**_token_row(plan, tid), **_context(plan, warp, mask, dsts)})
        for lane, hs in heads.items():
            for h in hs:
                ch = _channels(h.key_terms, x)
                for row, v in ch.items():
                    if lane in lanes and row == warp * R + dsts[s]:
                        assert v > 0, (h.name, vocab[tid])
                    elif lane in lanes and row // R == warp:
                        assert v < 0, (h.name, vocab[tid], row)
                    else:
                        assert v == 0.0, (h.name, vocab[tid], row)


def test_no_other_token_keys_any_register_channel(plan):
    vocab, heads, gates = vocab_for(LARGE_MACHINE), _register_heads(plan), _gates(plan, "regkey")
    for tid in (vocab.id("MEM", item=3, addr=9), vocab.id("C0", value=2047), vocab.id("PVAL", lane=1, bits=255),
                vocab.id("EXEC", block=3, warp=2, mask=15), vocab.id("WST", warp=2)):
        x = _evaluate(gates, {**_token_row(plan, tid), **_context(plan, 2, 15, [15, 15, 15])})
        for hs in heads.values():
            for h in hs:
                assert all(v == 0.0 for v in _channels(h.key_terms, x).values()), (h.name, vocab[tid])


def _head(plan, name: str):
    return next(h for lp in plan.layers if lp.mixer is not None for h in lp.mixer.heads if h.name == name)


@pytest.mark.parametrize("warp", [0, 6])
def test_register_reads_query_their_row_at_an_exec_pass_and_nothing_else(plan, warp):
    """At an EXEC pass a register read's query is the (running warp, source register) row,
    every other row below zero; at any other token every channel is exactly 0."""
    vocab, lay, R = vocab_for(LARGE_MACHINE), plan.layout, LARGE_MACHINE.regs
    gates = _gates(plan, "exec.now") + _gates(plan, "src.s")
    tokens = [vocab.id("EXEC", block=3, warp=warp, mask=15), vocab.id("C0", value=2047),
              vocab.id("VAL", slot=0, lane=1), vocab.id("MEM", item=0, addr=9), vocab.id("WST", warp=warp),
              vocab.id("PVAL", lane=2, bits=3)]
    for tid in tokens:
        for s, X, reg in ((0, "a", 5), (1, "b", 15), (2, "d", 1), (0, "c", 12)):
            off, width = SLOT_FIELDS[f"src_{X}"]
            rom = _rom_dims(plan, "rom" if s == 0 else f"rom.s{s}")
            x = {lay.spaces["ctx.warp"][warp]: 1.0, **_token_row(plan, tid)}
            x.update({rom[s * SLOT_BITS + off + i]: 1.0 for i in range(width) if reg >> i & 1})
            x = _evaluate(gates, x)
            for lane in range(LARGE_MACHINE.lanes):
                ch = _channels(_head(plan, f"reg.s{s}.{X}.lane{lane}").query_terms, x)
                if vocab[tid].kind == "EXEC":
                    assert ch[warp * R + reg] > 0, (s, X, lane)
                    assert all(v < 0 for row, v in ch.items() if row != warp * R + reg), (s, X, lane)
                else:
                    assert all(v == 0.0 for v in ch.values()), (s, X, lane, vocab[tid])
