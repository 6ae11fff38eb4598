"""The ALU's logic / shift / select family: mov, and, or, xor, not, shl, shr, selp.

One instance per (slot, lane). Operands ``a``, ``b`` are 32-bit words of level-1 bits
(LSB first); each op has a one-hot selection bit (at most one op bit of the whole ALU
is 1), and the selected op's result is *added* to ``out`` (a result bus other units add
to as well). With none of this family's op bits set, exactly 0 is added.

Two MLP layers (``layer0`` and ``layer0 + 1``), every gate an integer threshold with
margin 0.5 (docs/CIRCUIT.md, "the clamp pair"):

layer0 (MLP 1)
    bitwise ops, 4 gates per bit, written straight to ``out``::

        G1 = [a + b + 1 and + 2 or + 2 xor + 3 not >= 3]        -> +1
        G2 = [2a + b + xor + 2 not >= 4]                        -> -1
        GA = [3a + 2 mov + selp + p >= 5]                       -> +1
        GB = [b - p + selp >= 2]                                -> +1

    so ``out = G1 - G2 + GA + GB`` is a&b, a|b, (a|b)-(a&b), 1-a, a, p?a:b.

    shift stage 1: the shift amount s = b (unsigned, 32 bits) is split as
    ``s = 4h + k`` (k = bits 0..1, h = bits 2..4) plus ``big = [bits 5..31 != 0]``.
    ``xs = a << k`` when shl is selected, ``a >> k`` (arithmetic fill ``a31 & signed``)
    when shr is (one private word: the op bit is a term of every stage-1 gate), one gate
    per (bit, k) ``[a_src + op + E_k(b0, b1) >= 2 + popcount(k)]`` where
    ``E_k`` weighs b's bits +1 where k has a 1 and -1 where it has a 0 (so the sum
    reaches its maximum only when the 2-bit field equals k); the one-hot
    ``eqh[h] = [bits 2..4 == h and bits 5..31 == 0]`` and ``big``.

layer0 + 1 (MLP 2)
    shift stage 2, gated by the op bit: ``out_i += [xs_{i-4h} + eqh_h + shl >= 3]``,
    ``out_i += [xs_{i+4h} + eqh_h + shr >= 3]``, sign fill ``[a31 + signed + eqh_h + shr
    >= 4]`` to the bits ``i >= 32 - 4h`` (one gate per h, many outputs) and the clamp
    ``[a31 + signed + big + shr >= 4]`` to all 32 bits (amounts >= 32).

Every gate's input sum lies within [-30, 8] bit units.
"""

from __future__ import annotations

from qwengpu_mlx.compiler.mlp import eq_terms
from qwengpu_mlx.compiler.residual import BIT, Subspace

OPS = ("mov", "and", "or", "xor", "not", "shl", "shr", "selp")
W = 32


def build_logic_family(plan, layer0: int, *, name: str, a: Subspace, b: Subspace, p: int,
                       op: dict[str, int], signed: int, out: Subspace) -> int:
    """Build one logic/shift/select unit; returns the first MLP layer it leaves unused.

    Uses ``plan.mlp(layer0)`` (bitwise ops and shift stage 1) and, when a shift is
    present, ``plan.mlp(layer0 + 1)`` (shift stage 2). Allocates ``{name}.xs`` (32),
    ``{name}.eqh`` (8) and ``{name}.big`` (1).
    """
    for s, what in ((a, "a"), (b, "b"), (out, "out")):
        if len(s) != W:
            raise ValueError(f"{name}: {what} must be {W} bits wide, got {len(s)}")
    unknown = set(op) - set(OPS)
    if unknown:
        raise ValueError(f"{name}: unknown ops {sorted(unknown)} (known: {OPS})")
    lay = plan.layout
    has = op.__contains__
    shifts = has("shl") or has("shr")
    if not op:
        return layer0
    m1 = plan.mlp(layer0)

    # ---- bitwise ops (layer0) -------------------------------------------------------
    g1_ops = [(k, w) for k, w in (("and", 1), ("or", 2), ("xor", 2), ("not", 3)) if has(k)]
    g2_ops = [(k, w) for k, w in (("xor", 1), ("not", 2)) if has(k)]
    uses_b = any(has(k) for k in ("and", "or", "xor"))
    for i in range(W):
        if g1_ops:
            terms = [(a[i], 1)] + ([(b[i], 1)] if uses_b else []) + [(op[k], w) for k, w in g1_ops]
            m1.gate(f"{name}.g1[{i}]", terms, 3, [(out[i], 1.0)])
        if g2_ops:
            terms = [(a[i], 2)] + ([(b[i], 1)] if has("xor") else []) + [(op[k], w) for k, w in g2_ops]
            m1.gate(f"{name}.g2[{i}]", terms, 4, [(out[i], -1.0)])
        if has("mov") or has("selp"):
            terms = [(a[i], 3)]
            if has("mov"):
                terms.append((op["mov"], 2))
            if has("selp"):
                terms += [(op["selp"], 1), (p, 1)]
            m1.gate(f"{name}.ga[{i}]", terms, 5, [(out[i], 1.0)])
        if has("selp"):
            m1.gate(f"{name}.gb[{i}]", [(b[i], 1), (p, -1), (op["selp"], 1)], 2, [(out[i], 1.0)])
    if not shifts:
        return layer0 + 1

    # ---- shift stage 1 (layer0): k = b[0:2], eqh = one-hot b[2:5] with b[5:] == 0 ------
    lo, hi, upper = [b[0], b[1]], [b[2], b[3], b[4]], [b[m] for m in range(5, W)]
    big = lay.alloc(f"{name}.big", 1)[0]
    eqh = lay.alloc(f"{name}.eqh", 8)
    m1.or_(f"{name}.big", upper, [(big, 1.0)])
    for h in range(8):
        t, pc = eq_terms(hi, h)
        m1.gate(f"{name}.eqh[{h}]", t + [(d, -1) for d in upper], pc, [(eqh[h], 1.0)])
    # one word holds a << k for shl and a >> k for shr (the op bit gates stage 1 too)
    xl = xr = lay.alloc(f"{name}.xs", W, value_range=BIT)
    if has("shl"):
        for i in range(W):
            for k in range(min(i, 3) + 1):
                t, pc = eq_terms(lo, k)
                m1.gate(f"{name}.xl[{i}]<{k}", [(a[i - k], 1), (op["shl"], 1)] + t, 2 + pc, [(xl[i], 1.0)])
    if has("shr"):
        for i in range(W):
            for k in range(min(W - 1 - i, 3) + 1):
                t, pc = eq_terms(lo, k)
                m1.gate(f"{name}.xr[{i}]>{k}", [(a[i + k], 1), (op["shr"], 1)] + t, 2 + pc, [(xr[i], 1.0)])
        for k in range(1, 4):  # arithmetic fill of the top k bits
            t, pc = eq_terms(lo, k)
            m1.gate(f"{name}.xr.fill{k}", [(a[W - 1], 1), (signed, 1), (op["shr"], 1)] + t, 3 + pc,
                    [(xr[i], 1.0) for i in range(W - k, W)])

    # ---- shift stage 2 (layer0 + 1) --------------------------------------------------
    m2 = plan.mlp(layer0 + 1)
    if has("shl"):
        for i in range(W):
            for h in range(i // 4 + 1):
                m2.gate(f"{name}.shl[{i}]<{4 * h}", [(xl[i - 4 * h], 1), (eqh[h], 1), (op["shl"], 1)], 3,
                        [(out[i], 1.0)])
    if has("shr"):
        for i in range(W):
            for h in range((W - 1 - i) // 4 + 1):
                m2.gate(f"{name}.shr[{i}]>{4 * h}", [(xr[i + 4 * h], 1), (eqh[h], 1), (op["shr"], 1)], 3,
                        [(out[i], 1.0)])
        for h in range(1, 8):
            m2.gate(f"{name}.shr.fill{4 * h}", [(a[W - 1], 1), (signed, 1), (eqh[h], 1), (op["shr"], 1)], 4,
                    [(out[i], 1.0) for i in range(W - 4 * h, W)])
        m2.gate(f"{name}.shr.fill32", [(a[W - 1], 1), (signed, 1), (big, 1), (op["shr"], 1)], 4,
                [(out[i], 1.0) for i in range(W)])
    return layer0 + 2
