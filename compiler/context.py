"""The context stage: single-row heads holding the last EXEC, the launch geometry and the last record header.

Each head keys on the token kind that writes it and reads its one row at every pass, so
the residual holds what the last ``EXEC``, ``CTA``, ``GRID``, ``DIMS`` and record header
said. docs/CIRCUIT.md, "Pass layout", item 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.core.vocab import ENT_ITEMS

from qwengpu_mlx.compiler.deltanet import CURRENT
from qwengpu_mlx.compiler.mlp import eq_terms
from qwengpu_mlx.compiler.residual import Subspace
from qwengpu_mlx.compiler.wiring import CircuitWiring


@dataclass(frozen=True)
class Context:
    """The residual dims the context heads write: what the last tokens of each kind said."""

    block: Subspace  # the last EXEC's block: one-hot, or binary where the token carries it so
    warp: Subspace  # the last EXEC's warp, one-hot
    mask: Subspace  # the last EXEC's lane mask
    ntid: Subspace  # threads per block (DIMS), binary
    mask0: Subspace  # warp 0's lanes (DIMS)
    ctaid: Subspace  # the running thread block (CTA), binary
    nctaid: Subspace  # thread blocks in the grid (GRID), binary
    phase_cta: int  # dim: the last of EXEC/CTA was a CTA (a thread block's start)
    hdr_val: Subspace  # the last VAL header's (slot, lane), one-hot over slot x lane (made by ``fetch``)
    hdr_mem: Subspace  # the last MEM header's item, one-hot
    hdr_val_slot: Subspace  # the last VAL/VALU header's slot
    hdr_val_lane: Subspace  # the last VAL header's lane
    hdr_ent: Subspace  # the last ENT header's item
    hdr_wst: Subspace  # the last WST header's warp
    hdr_valu: Subspace  # the last header was a VALU (its slot: ``hdr_val_slot``)


def exec_block_onehot(cw: CircuitWiring, L: int, single, block: Subspace) -> None:
    """The last EXEC's block as a one-hot (``block``) from the EXEC token's binary digits:
    one context head keeps the digits and a bit that an EXEC has been written (before the
    first, the digits read 0 and no block is named, as the one-hot token left it), and MLP
    ``L`` decodes them, one gate per block. The ROM heads' one-hot queries then stay exact
    zeros on every block but the running one, where a 128-block one-hot took four heads."""
    t = cw.t
    digits = cw.alloc("ctx.block.digits", t.exec_b.width)
    seen = cw.alloc("ctx.block.seen", 1)
    single("ctx.exec.block", [t.kind["EXEC"]], list(t.exec_b.dims) + [t.kind["EXEC"]],
           list(digits.dims) + list(seen.dims))
    for b in range(cw.m.rom_blocks):
        terms, th = eq_terms(digits.dims, b)
        cw.gate(L, f"ctx.block{b}", terms + [(seen[0], 1)], th + 1, [(block[b], 1)])


def context(cw: CircuitWiring, L: int) -> Context:
    """Single-row heads at layer ``L``: last EXEC, launch geometry, last record header."""
    t, m = cw.t, cw.m
    digits_alone = t.exec_binary and not t.binary  # the EXEC block's digits, the rest one-hot
    block = cw.alloc("ctx.block", m.rom_blocks if digits_alone else t.exec_b.width)
    warp = cw.alloc("ctx.warp", m.max_warps)
    mask = cw.alloc("ctx.mask", m.lanes)
    ntid = cw.alloc("ctx.ntid", t.dims_ntid.width)
    mask0 = cw.alloc("ctx.mask0", m.lanes)
    S, N = m.slots_per_block, m.lanes
    hdr_val = cw.alloc("ctx.hdr.val", S * N)  # VAL(s, l) one-hot
    hdr_mem = cw.alloc("ctx.hdr.mem", cw.vocab.input_item + 1)  # MEM item one-hot

    def single(name, key_dims, sources, out):
        """One single-row head per value dim's worth of bits (a 128-block one-hot needs two)."""
        width = cw.plan.mixer(L).Dv // 2
        for part, start in enumerate(range(0, len(sources), width)):
            chunk = sources[start:start + width]
            h = cw.head(L, name if part == 0 else f"{name}.{part}", 1, len(chunk))
            for d in key_dims:
                h.key(0, d, CURRENT)
            for i, d in enumerate(chunk):
                h.value_bit(i, d, CURRENT)
                h.read_bit(i, out[start + i])
            cw.one_row_reader(h)

    if digits_alone:
        exec_block_onehot(cw, L, single, block)
    else:
        single("ctx.exec.block", [t.kind["EXEC"]], list(t.exec_b.dims), block)
    ctaid = cw.alloc("ctx.ctaid", t.cta_c.width)  # binary
    nctaid = cw.alloc("ctx.nctaid", t.grid_n.width)  # binary
    single("ctx.cta", [t.kind["CTA"]], list(t.cta_c.dims), list(ctaid.dims))
    single("ctx.grid", [t.kind["GRID"]], list(t.grid_n.dims), list(nctaid.dims))
    phase = cw.alloc("ctx.phase_cta", 1)  # the last of EXEC/CTA was a CTA
    single("ctx.phase", [t.kind["EXEC"], t.kind["CTA"]], [t.kind["CTA"]], list(phase.dims))
    single("ctx.exec.wm", [t.kind["EXEC"]], list(t.exec_w.dims) + list(t.exec_m.dims),
           list(warp.dims) + list(mask.dims))
    single("ctx.dims", [t.kind["DIMS"]], list(t.dims_ntid.dims) + list(t.dims_mask0.dims),
           list(ntid.dims) + list(mask0.dims))
    # VAL header: slot x lane one-hot is an AND: the head stores slot and lane, the
    # fetch MLP combines them; MEM header: item one-hot
    hdr_vs = cw.alloc("ctx.hdr.val.slot", S)
    hdr_vl = cw.alloc("ctx.hdr.val.lane", N)
    hdr_ent = cw.alloc("ctx.hdr.ent", ENT_ITEMS)
    hdr_wst = cw.alloc("ctx.hdr.wst", m.max_warps)
    hdr_vu = cw.alloc("ctx.hdr.valu", 1)  # the last header was a VALU (its slot: hdr_vs)
    single("ctx.hdr", [t.kind["VAL"], t.kind["VALU"], t.kind["MEM"], t.kind["ENT"], t.kind["WST"]],
           list(t.val_slot.dims) + list(t.val_lane.dims) + list(t.mem_item.dims) + list(t.ent_item.dims)
           + list(t.wst_w.dims) + [t.kind["VALU"]],
           list(hdr_vs.dims) + list(hdr_vl.dims) + list(hdr_mem.dims)
           + list(hdr_ent.dims) + list(hdr_wst.dims) + list(hdr_vu.dims))
    return Context(block, warp, mask, ntid, mask0, ctaid, nctaid, phase[0], hdr_val, hdr_mem,
                   hdr_vs, hdr_vl, hdr_ent, hdr_wst, hdr_vu)
