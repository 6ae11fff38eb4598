"""The launch vocabulary's ids, computed from each kind's segment, are the ids of the
vocabulary as its table defines it (the kinds in order, each kind's fields nested with
the last fastest): every id to its token and back, on every named machine."""

from __future__ import annotations

import pytest

from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.core.vocab import FAULT_CODES, MAX_GRID, Vocab


def listed_tokens(m) -> list[tuple]:
    """The vocabulary written out token by token from the module's table of kinds."""
    out = [("PROG", (("block", b), ("piece", p))) for b in range(m.rom_blocks) for p in range(4 * m.slots_per_block + 2)]
    out += [("MEM", (("item", i), ("addr", a))) for i in range(m.slots_per_block * m.lanes + 1)
            for a in range(m.mem_words)]
    out += [(f"C{j}", (("value", v),)) for j, bits in enumerate((11, 11, 10)) for v in range(1 << bits)]
    out += [("DIMS", (("ntid", n),)) for n in range(1, m.lanes * m.max_warps + 1)]
    out += [("GRID", (("nctaid", n),)) for n in range(1, MAX_GRID + 1)] + [("GO", ())]
    out += [("CTA", (("ctaid", c),)) for c in range(MAX_GRID)]
    out += [("EXEC", (("block", b), ("warp", w), ("mask", k))) for b in range(m.rom_blocks)
            for w in range(m.max_warps) for k in range(1, 1 << m.lanes)]
    out += [("VAL", (("slot", s), ("lane", ln))) for s in range(m.slots_per_block) for ln in range(m.lanes)]
    out += [("PVAL", (("lane", ln), ("bits", b))) for ln in range(m.lanes) for b in range(1 << m.preds)]
    out += [("ENT", (("item", i), ("warp", w), ("level", lv))) for i in range(3) for w in range(m.max_warps)
            for lv in range(8)]
    out += [("WST", (("warp", w),)) for w in range(m.max_warps)] + [("STOP", ())]
    out += [("FAULT", (("code", c),)) for c in sorted(FAULT_CODES)]
    out += [("VALU", (("slot", s),)) for s in range(m.slots_per_block)]
    return out


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_every_id_is_its_token(name):
    m = MACHINES[name]
    v, listed = Vocab(m), listed_tokens(m)
    assert len(v) == len(listed)
    for i, (kind, fields) in enumerate(listed):
        assert (v[i].kind, v[i].fields) == (kind, fields)
        assert v.id(kind, **dict(fields)) == i
    assert [(t.kind, t.fields) for t in v.tokens] == listed and v.ids[v[len(v) - 1]] == len(v) - 1
    assert v[-1] == v[len(v) - 1]


def test_tokens_no_vocabulary_has_are_refused():
    v = Vocab(MACHINES["published"])
    for kind, fields in [("EXEC", {"block": 0, "warp": 0, "mask": 0}), ("MEM", {"item": 0, "addr": 126}),
                         ("DIMS", {"ntid": 0}), ("PROG", {"piece": 0, "block": 0}), ("NOPE", {})]:
        with pytest.raises(KeyError):
            v.id(kind, **fields)
    with pytest.raises(IndexError):
        v[len(v)]
