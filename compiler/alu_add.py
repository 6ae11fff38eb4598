"""The ALU's adder family: add, sub, neg, abs, min, max, setp, and a plain 32-bit adder.

Both builders are three SwiGLU MLP layers of clamp-pair threshold gates
(docs/CIRCUIT.md, "Logic in SwiGLU: the clamp pair"): every gate is
``T = [sum w x >= theta]`` over integer-valued residual dims, and every such sum stays
below 2^11 in magnitude, so float32 evaluates it exactly up to the bits' level error.

Scheme (8-bit limbs k = 0..3, bit i = 8k + r of limb k)
--------------------------------------------------------
The adder computes ``X + Y + cin`` where, per selected op (at most one op bit is 1):

===========  =========  ==========  ====
op           X          Y           cin
===========  =========  ==========  ====
add          a          b           0
sub/min/     a          ~b          1     (compare = carry out of a - b)
max/setp
neg          ~a         0           1
abs, a<0     ~a         0           1     ("negC" = neg OR (abs AND a31))
abs, a>=0    a          0           0
===========  =========  ==========  ====

MLP 1 (``layer0``)
  * limb generate/propagate per operand form, each gate conditioned on its op by a
    term ``M (cond - 1)`` (``M`` just large enough to push it below its threshold):
    ``G_k = [s_k >= 256]``, ``P_k = [s_k >= 255]`` with the limb sum
    ``s_k = sum_r 2^r (X_r + Y_r)`` (0..510). Since at most one op is selected, all
    forms write into one dim ``GP_k = G_k + P_k`` (0, 1 or 2). For neg/abs the limb sum
    ``255 - a_k`` never generates, so only ``P_k = [a_k == 0]`` is built.
    Limb 3 is built only for the compares (min/max/setp), with the sign bits of both
    operands flipped when ``signed`` is 1 (s32 order = u32 order of ``x ^ 2^31``;
    flipping both leaves the equality test unchanged).
  * ``D = sum_k (P_k - G_k)`` of the subtractor (number of limbs with ``a_k == b_k``),
    for setp's eq/ne: the same gates write -1/+1 into ``D``.
  * ``negC = [2 neg + abs + a31 >= 2]``.
  * ``Q_i = [add + b_i >= 2] - [sub + b_i >= 2] - 2 [a_i AND negC]`` so that the
    per-bit operand sum of the *arithmetic* ops (add, sub, neg, abs) is linear:
    ``Z_i = X_i + Y_i = a_i + Q_i + sub + negC`` (a_i + b_i, a_i + 1 - b_i, 1 - a_i, a_i).
MLP 2
  * limb carries ``c_k = [2 cin + sum_{j<k} 2^(j+1) GP_j >= 2^(k+1)]`` (k = 1..3), with
    ``cin = sub + min + max + setp + negC``; the carry out ``ge = c_4`` is ``a >= b``
    (u32, or s32 through the flipped sign bits).
MLP 3 (writes ``out`` / ``pout``)
  * sum bit i = ``[x >= 2^r] - [x >= 2^(r+1)] + [x >= 3 2^r]`` with
    ``x = sum_{t<=r} 2^t Z_(8k+t) + carry into limb k`` (0 .. 2^(r+2)-1), each gate
    conditioned on ``arith = add + sub + neg + abs``; carry into limb 0 is ``sub + negC``.
  * min/max: ``[min + a_i - ge >= 2] + [min + b_i + ge >= 3]`` (a if a < b, else b),
    ``[max + a_i + ge >= 3] + [max + b_i - ge >= 2]``.
  * setp: one gate per comparison, with ``eq = (D == 4)``:
    eq ``[D + 8(cmp_eq + setp - 2) >= 4]``, ne ``[-D + 8(cmp_ne + setp - 2) >= -3]``,
    lt ``[cmp_lt + setp - ge >= 2]``, le ``[8(cmp_le + 2 setp) + D - 4 ge >= 24]``,
    gt ``[8(cmp_gt + 2 setp) + 4 ge - D >= 25]``, ge ``[cmp_ge + setp + ge >= 3]``.

Every gate fires only when its op bit is 1, so with none of this family's ops selected
nothing is added to ``out``/``pout`` (the clamp pair gives exactly 0, not just ~0).
Every gate's sum of |weights| is below 2^11 (the largest: sum bit 7 of a limb, whose
reachable sums stay within about +-2^10), so the weighted sums are exact in float32;
inputs and op bits with a level error e shift a sum by at most ~2^11 e bits.

Levels: the weighted sums mix the operand bits with dims this builder writes (Q, GP,
c, D, negC), so all must be at the same level: exact at signal ratio r = 1 (circuit
tokens alone in the RMS); measured still exact at r = 0.9999 and wrong at r = 0.999,
because MLP-written values come out at r^2 (docs/CIRCUIT.md, "Levels").

Layers missing from ``plan`` up to ``layer0 + 2`` are appended.

Cost of a full instance (all seven ops): 3 MLP layers, 353 gates (706 hidden units:
119 / 4 / 230 per layer) and 42 scratch residual dims (Q 32, GP 4, c 4, D, negC).
``build_add32`` alone: 3 layers, 105 gates (6 / 3 / 96), 6 scratch dims.
"""

from __future__ import annotations

from qwengpu_mlx.compiler.residual import Subspace

OPS = ("add", "sub", "neg", "abs", "min", "max", "setp")
CMPS = ("eq", "ne", "lt", "le", "gt", "ge")
DEPTH = 3  # MLP layers used by both builders


def _mlps(plan, layer0: int, n: int = DEPTH):
    while len(plan.layers) < layer0 + n:
        plan.new_layer()
    return [plan.mlp(layer0 + j) for j in range(n)]


def _limb(k: int) -> range:
    return range(8 * k, 8 * k + 8)


def _gate(m, name, terms, theta, cond, M, outputs):
    """``[sum terms + M (sum cond - on) >= theta]`` with ``cond = (terms, on)``."""
    cterms, on = cond
    m.gate(name, list(terms) + [(d, M * w) for d, w in cterms], theta + M * on, outputs)


def build_add32(plan, layer0: int, *, name: str, a: Subspace, b: Subspace, out: Subspace,
                enable: int | None = None, carry_in_one: bool = False,
                invert_b: bool = False) -> int:
    """``out += a + (~b if invert_b else b) + carry_in_one`` (mod 2^32) when ``enable`` is 1.

    With ``enable`` None the adder always runs (on circuit tokens). Uses the MLPs of
    ``layer0 .. layer0+2``; returns ``layer0 + 3``. 105 gates, 6 scratch dims.
    """
    if len(a) != 32 or len(b) != 32 or len(out) != 32:
        raise ValueError("build_add32 works on 32-bit subspaces")
    m1, m2, m3 = _mlps(plan, layer0)
    lay = plan.layout
    gp = lay.alloc(f"{name}.gp", 3)
    cy = lay.alloc(f"{name}.c", 3)
    cin = 1 if carry_in_one else 0
    cond = ([(enable, 1)], 1) if enable is not None else ([], 0)

    def ybit(i):  # (terms, const) of Y_i
        return ([(b[i], -1)], 1) if invert_b else ([(b[i], 1)], 0)

    # MLP 1: G_k, P_k of limbs 0..2 into GP_k (limb 3's carry out is not needed).
    for k in range(3):
        terms, const = [], 0
        for r, i in enumerate(_limb(k)):
            yt, yc = ybit(i)
            terms += [(a[i], 2 ** r)] + [(d, w * 2 ** r) for d, w in yt]
            const += yc * 2 ** r
        M = 256 if enable is not None else 0  # s_k <= 510: s_k - 256 stays below both cuts
        _gate(m1, f"{name}.G{k}", terms, 256 - const, cond, M, [(gp[k], 1)])
        _gate(m1, f"{name}.P{k}", terms, 255 - const, cond, M, [(gp[k], 1)])
    # MLP 2: carries into limbs 1..3 (GP is 0 when disabled, so c_k = 0 then).
    for k in range(1, 4):
        terms = [(gp[j], 2 ** (j + 1)) for j in range(k)]
        m2.gate(f"{name}.c{k}", terms, 2 ** (k + 1) - 2 * cin, [(cy[k - 1], 1)])
    # MLP 3: sum bits.
    for k in range(4):
        for r in range(8):
            terms, const = [], 0
            for t in range(r + 1):
                i = 8 * k + t
                yt, yc = ybit(i)
                terms += [(a[i], 2 ** t)] + [(d, w * 2 ** t) for d, w in yt]
                const += yc * 2 ** t
            if k == 0:
                const += cin
            else:
                terms.append((cy[k - 1], 1))
            M = 2 ** (r + 2) if enable is not None else 0  # x <= 2^(r+2) - 1 when disabled
            for t, (thr, sign) in enumerate(((2 ** r, 1.0), (2 ** (r + 1), -1.0), (3 * 2 ** r, 1.0))):
                _gate(m3, f"{name}.s{8 * k + r}.{t}", terms, thr - const, cond, M,
                      [(out[8 * k + r], sign)])
    return layer0 + DEPTH


def build_add_family(plan, layer0: int, *, name: str, a: Subspace, b: Subspace,
                     op: dict[str, int], signed: int, cmp: dict[str, int],
                     out: Subspace, pout: int) -> int:
    """Adder-family ops selected by one-hot ``op`` dims; see the module docstring.

    ``out += result bits`` of add/sub/neg/abs/min/max, ``pout += (a cmp b)`` for setp;
    nothing when none of ``op``'s dims is 1. Uses the MLPs of ``layer0 .. layer0+2``
    and returns ``layer0 + 3``.
    """
    unknown = set(op) - set(OPS)
    if unknown:
        raise ValueError(f"unknown adder-family ops {sorted(unknown)}")
    if len(a) != 32 or len(b) != 32 or len(out) != 32:
        raise ValueError("build_add_family works on 32-bit subspaces")
    if "setp" in op:
        if set(cmp) - set(CMPS):
            raise ValueError(f"unknown comparisons {sorted(set(cmp) - set(CMPS))}")
    m1, m2, m3 = _mlps(plan, layer0)
    lay = plan.layout
    if not op:
        return layer0 + DEPTH

    def o(*names):  # linear terms: sum of the named op bits present
        return [(op[n], 1) for n in names if n in op]

    has = lambda *names: any(n in op for n in names)  # noqa: E731
    subfam = o("sub", "min", "max", "setp")
    cmpfam = o("min", "max", "setp")
    arith = o("add", "sub", "neg", "abs")

    # ---- MLP 1 -------------------------------------------------------------------
    gp = lay.alloc(f"{name}.gp", 4 if cmpfam else 3)
    D = lay.alloc(f"{name}.eqlimbs", 1)[0] if "setp" in op else None
    if "abs" in op:
        negc_dim = lay.alloc(f"{name}.negc", 1)[0]
        m1.gate(f"{name}.negc", o("neg") + o("neg") + [(op["abs"], 1), (a[31], 1)], 2,
                [(negc_dim, 1)])
        negC = [(negc_dim, 1)]
    else:
        negC = o("neg")  # neg alone: negC is the op bit itself

    def limb_terms(k, xa, yb):
        """Terms/const of s_k = sum 2^r (X + Y); xa/yb in {'a','~a','b','~b',None}."""
        terms, const = [], 0
        for r, i in enumerate(_limb(k)):
            for form in (xa, yb):
                if form is None:
                    continue
                v = a if form.endswith("a") else b
                if form.startswith("~"):
                    terms.append((v[i], -(2 ** r)))
                    const += 2 ** r
                else:
                    terms.append((v[i], 2 ** r))
        return terms, const

    def gp_gates(tag, k, terms, const, cond, with_g=True, to_d=False):
        M = 256  # s_k <= 510: s_k - 256 <= 254 keeps both cuts (254.5, 255.5) half a bit off
        if with_g:
            _gate(m1, f"{name}.{tag}.G{k}", terms, 256 - const, cond, M,
                  [(gp[k], 1)] + ([(D, -1)] if to_d else []))
        _gate(m1, f"{name}.{tag}.P{k}", terms, 255 - const, cond, M,
              [(gp[k], 1)] + ([(D, 1)] if to_d else []))

    if "add" in op:
        for k in range(3):
            gp_gates("add", k, *limb_terms(k, "a", "b"), ([(op["add"], 1)], 1))
    if subfam:
        for k in range(3):
            gp_gates("sub", k, *limb_terms(k, "a", "~b"), (subfam, 1), to_d=D is not None)
    if cmpfam:
        terms, const = limb_terms(3, "a", "~b")
        gp_gates("cmpu", 3, terms, const, (cmpfam + [(signed, -1)], 1), to_d=D is not None)
        # signed: a31 -> 1 - a31, (1 - b31) -> b31 changes s_3 by 128 (1 - 2 a31) + 128 (2 b31 - 1)
        terms_s = terms + [(a[31], -256), (b[31], 256)]
        gp_gates("cmps", 3, terms_s, const, (cmpfam + [(signed, 1)], 2), to_d=D is not None)
    if has("neg", "abs"):
        for k in range(3):
            terms = [(a[i], -(2 ** r)) for r, i in enumerate(_limb(k))]  # s_k - 255 = -a_k
            if "neg" in op:
                gp_gates("neg", k, terms, 255, ([(op["neg"], 1)], 1), with_g=False)
            if "abs" in op:
                gp_gates("absn", k, terms, 255, ([(op["abs"], 1), (a[31], 1)], 2), with_g=False)

    q = None
    if arith:
        q = lay.alloc(f"{name}.q", 32)
        for i in range(32):
            if "add" in op:
                m1.gate(f"{name}.q{i}.add", [(op["add"], 1), (b[i], 1)], 2, [(q[i], 1)])
            if "sub" in op:
                m1.gate(f"{name}.q{i}.sub", [(op["sub"], 1), (b[i], 1)], 2, [(q[i], -1)])
            if has("neg", "abs"):
                # a_i AND (neg OR (abs AND a31)) = [2 a_i + 2 neg + abs + a31 >= 4]
                terms = [(a[i], 2)] + [(d, 2 * w) for d, w in o("neg")] + \
                    ([(op["abs"], 1), (a[31], 1)] if "abs" in op else [])
                m1.gate(f"{name}.q{i}.neg", terms, 4, [(q[i], -2)])

    # ---- MLP 2: carries ------------------------------------------------------------
    cy = lay.alloc(f"{name}.c", 4 if cmpfam else 3)
    cin = subfam + negC
    for k in range(1, 5 if cmpfam else 4):
        terms = [(d, 2 * w) for d, w in cin] + [(gp[j], 2 ** (j + 1)) for j in range(k)]
        m2.gate(f"{name}.c{k}", terms, 2 ** (k + 1), [(cy[k - 1], 1)])
    ge = cy[3] if cmpfam else None

    # ---- MLP 3: results ---------------------------------------------------------------
    if q is not None:
        cin_arith = o("sub") + negC
        for k in range(4):
            for r in range(8):
                terms = []
                for t in range(r + 1):
                    i = 8 * k + t
                    terms += [(a[i], 2 ** t), (q[i], 2 ** t)]
                terms += [(d, w * (2 ** (r + 1) - 1)) for d, w in cin_arith]  # sub/negC: Z += 1
                terms += cin_arith if k == 0 else [(cy[k - 1], 1)]
                M = 2 ** (r + 1)  # off: Q = 0, x <= 2^(r+1) - 1 + carry
                for t, (thr, sign) in enumerate(((2 ** r, 1.0), (2 ** (r + 1), -1.0),
                                                 (3 * 2 ** r, 1.0))):
                    _gate(m3, f"{name}.s{8 * k + r}.{t}", terms, thr, (arith, 1), M,
                          [(out[8 * k + r], sign)])
    for i in range(32):
        if "min" in op:
            m3.gate(f"{name}.min{i}.a", [(op["min"], 1), (a[i], 1), (ge, -1)], 2, [(out[i], 1)])
            m3.gate(f"{name}.min{i}.b", [(op["min"], 1), (b[i], 1), (ge, 1)], 3, [(out[i], 1)])
        if "max" in op:
            m3.gate(f"{name}.max{i}.a", [(op["max"], 1), (a[i], 1), (ge, 1)], 3, [(out[i], 1)])
            m3.gate(f"{name}.max{i}.b", [(op["max"], 1), (b[i], 1), (ge, -1)], 2, [(out[i], 1)])
    if "setp" in op:
        s = op["setp"]
        forms = {
            "eq": ([(D, 1), (cmp.get("eq"), 8), (s, 8)], 4 + 16),
            "ne": ([(D, -1), (cmp.get("ne"), 8), (s, 8)], -3 + 16),
            "lt": ([(cmp.get("lt"), 1), (s, 1), (ge, -1)], 2),
            "le": ([(cmp.get("le"), 8), (s, 16), (D, 1), (ge, -4)], 24),
            "gt": ([(cmp.get("gt"), 8), (s, 16), (ge, 4), (D, -1)], 25),
            "ge": ([(cmp.get("ge"), 1), (s, 1), (ge, 1)], 3),
        }
        for c in CMPS:
            if c in cmp:
                terms, theta = forms[c]
                m3.gate(f"{name}.setp.{c}", terms, theta, [(pout, 1)])
    return layer0 + DEPTH
