"""A large memory's parts: keys and queries that are exact zeros outside the part they name.

A memory of more words than a head has key rows spreads over parts of ``rows`` words,
one head per part for each reader (docs/CIRCUIT.md, "The large machine"). Decoded
against the constant ``ONE2``, every key and query channel of every part holds a
non-zero (a negative pre-activation) at every token, and a step that runs only what
ever held a non-zero (the native step) then runs every part's head at every token.

Here each part's row digits are gated by "the word is in this part" (one MLP gate per
digit and one for the part itself), and the head's threshold is written against that
part gate instead of ``ONE2``: a part's channels are exactly 0 at every token whose
header or address names no word of it, so a kernel that keeps to the first part's words
never touches the others. The decision is the same sum against the same threshold
where the part holds the word, in the same scale class (gate outputs, as ``ONE2``).
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.compiler.mlp import eq_terms
from qwengpu_mlx.compiler.residual import BIT, Subspace


@dataclass(frozen=True)
class Part:
    """One part of the memory as a key or a query sees it."""

    select: int  # dim: 1 where the word is in this part (and the conditions hold), else 0
    digits: Subspace  # the word's row inside the part; all zeros where ``select`` is 0


def part_count(words: int, rows: int) -> int:
    """Heads of ``rows`` key rows a memory of ``words`` words takes."""
    return -(-words // rows)


def row_bits(rows: int) -> int:
    """Digits of a row inside a part (a part's first word is a multiple of ``rows``)."""
    return max(1, (rows - 1).bit_length())


def gated_parts(cw, L: int, name: str, digits: list[int], conditions: list[int], rows: int) -> list[Part]:
    """Per part of ``rows`` words (MLP ``L``): the part gate ``[conditions all hold and the
    high digits name the part]`` and the low digits, each ANDed with that gate."""
    low = row_bits(rows)
    parts = []
    for p in range(part_count(cw.m.mem_words, rows)):
        high, th = eq_terms(digits[low:], p)
        cond = high + [(c, 1) for c in conditions]
        th += len(conditions)
        select = cw.alloc(f"{name}.p{p}", 1)[0]
        gated = cw.alloc(f"{name}.p{p}.row", low, value_range=BIT)
        cw.gate(L, f"{name}.p{p}", cond, th, [(select, 1)])
        for i in range(low):
            cw.gate(L, f"{name}.p{p}.d{i}", cond + [(digits[i], 1)], th + 1, [(gated[i], 1)])
        parts.append(Part(select, gated))
    return parts


def header_parts(cw, L: int, rows: int) -> list[Part]:
    """Per part, a ``MEM(item, addr)`` header naming one of its words (MLP ``L``): every
    memory head's key, whichever reader it serves, comes from the header alone."""
    t = cw.t
    return gated_parts(cw, L, "memkey", list(t.mem_addr.dims), [t.kind["MEM"]], rows)


def decode_part_rows(cw, h, key: Part, query: Part) -> None:
    """Head ``h``'s rows: key row r from a header naming row r of the part (three tokens
    back, the header's tap), query row r from an address naming it."""
    for r in range(h.rows):
        terms, th = eq_terms(key.digits.dims, r)
        cw.decoded_key(h, r, terms, th, tap=0, ref=key.select)
        terms, th = eq_terms(query.digits.dims, r)
        cw.decoded_query(h, r, terms, th, ref=query.select)
