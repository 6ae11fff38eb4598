"""The ALU's multiplier (``mul.lo``, ``mad.lo``) and a multi-operand adder, as threshold logic.

Both are built from :meth:`MLPBuilder.gate` clamp pairs only (docs/CIRCUIT.md, "Logic in
SwiGLU"), five MLP layers deep, and share one carry-resolution back end.

Scheme
------
Every 32-bit result here is ``(sum over n of Y_n 16^n) mod 2^32`` for eight *nibble sums*
``Y_n``, each a small non-negative integer that is linear in bits written by the first layer:

* mul/mad: ``Y_n = sum_{t<4} 2^t C_{4n+t} (+ nibble n of c)``, where ``C_m`` is the column
  sum of the partial products ``a_i b_j`` with ``i + j = m`` (``Y_n <= 60 n + 64``);
* multi-add: ``Y_n = sum over terms of the term's nibble n`` (``Y_n <= 15 x terms``).

Layers (``L1`` at ``layer0``; all thresholds are integers, so every margin is 1/2 bit):

L1  products / masks.  One gate per partial product, ``[a_i + b_j + op_mul + op_mad >= 3]``
    (528 gates; the op select is folded in here, so nothing downstream fires without it),
    ``[c_i + op_mad >= 2]`` for mad's addend; for the adder ``[x_i + mask + enable >= k]``
    per term bit.  Each gate adds ``2^(m mod 4) * s`` to the nibble dim ``nib[m // 4]``,
    so ``nib[n] = s Y_n`` with ``s = 2^-9`` (values <= 1: the RMSNorm sum of squares stays
    at bit size, and sums stay exact dyadics).
L2  nibble split.  Thermometer ``[Y_n >= 16 q]`` (q = 1 .. max Y_n / 16): each firing gate
    adds ``-16`` to ``nib[n]`` and ``+1`` to ``nib[n+1]`` (in place), leaving
    ``nib[n] = Z_n = (Y_n mod 16) + floor(Y_{n-1} / 16)`` (<= 41 for mul), and still
    ``sum Z_n 16^n == sum Y_n 16^n`` (mod 2^32).
L3  digits.  Full thermometer ``[Z_n >= j]`` (j = 1 .. max Z_n) over the single in-place dim;
    binary digit ``d_{n,s}`` of ``Z_n`` is ``sum_q (-1)^(q+1) [Z_n >= q 2^s]``, so each gate
    writes +-1 into the digits ``s`` with ``2^s | j``.  The digits sit at result positions
    ``4n + s``; the value of byte ``k`` before carries,
    ``W_k = Z_2k + 16 (Z_2k+1 mod 16) + floor(Z_2k-1 / 16)``, is < 512 (<= 279 for mul),
    so byte carries are single bits.  Digits that alone form a result bit (byte 0) are
    written straight to ``out`` (so ``out`` bits 0-7 land at ``layer0+2``, the rest at
    ``layer0+4``; read ``out`` from ``layer0+5`` on).
L4  generate / propagate per byte, ``G_k = [W_k >= 256]``, ``P_k = [W_k >= 255]``, written as
    the look-ahead sums ``E_k = sum_{j<k} (G_j + P_j) 2^j`` (the carry into byte k is
    ``[E_k >= 2^k]``).
L5  result bits.  Bit t of byte k is bit t of ``x_t + c_k`` with ``x_t`` the byte's digits
    of weight < 2^(t+1) (``x_t == W_k mod 2^(t+1)``): ``sum_q (-1)^(q+1) [x_t + c_k >= q 2^t]``
    (2-4 gates), the carry folded in as ``[2^k x_t + E_k >= 2^k q 2^t]``.

Why nibbles: a gate's T=1 output carries float32 rounding of ``A * (its input sum)`` (A,
the gate gain, is not a dyadic number), about ``S * 2^-23`` relative for input sums up to
``S`` bits, and a later gate multiplies it by the weight it reads it with.  Splitting
limbs into nibbles keeps every (input sum x downstream weight) small: L2 sums <= 484 read
back with weight 16; L3-L5 read only digits and single small dims.  Byte-wide splits save
one layer (G/P straight from the byte remainders) but multiply the outputs of sums of up to
8168 by 256, which float32 does not survive.  Largest input sum of any gate (bit units):
L1 3, L2 484, L3 41, L4 262, L5 2104 (the carry fold ``8 x_t``), all < 2^12.

Costs per instance (``tests/compiler/test_alu_mul.py`` prints them): mul/mad 974 gates = 1948 MLP
units (L1 560, L2 134, L3 224, L4 3, L5 53) and 42 scratch dims (8 nibbles, 32 digits,
2 carry sums); 5-term multi-add with masks and enable 393 gates (160, 32, 148, 3, 50) and
40 scratch dims.

Assumes every input (operands, op/mask/enable bits) is present at ``layer0``'s MLP input
and holds 0/1 within ~1e-4 (L1 re-levels all of them).
"""

from __future__ import annotations

from qwengpu_mlx.compiler.residual import Subspace

NIB = 4  # bits per nibble limb
BYTE = 8


def _piece_max(zmax: int, lo_bit: int, hi_bit: int, shift: int) -> int:
    """max over 0 <= Z <= zmax of ((Z >> lo_bit) mod 2^(hi_bit-lo_bit)) << shift."""
    if hi_bit <= lo_bit:
        return 0
    best = 0
    mask = (1 << (hi_bit - lo_bit)) - 1
    for z in range(zmax + 1):
        best = max(best, ((z >> lo_bit) & mask) << shift)
    return best


def resolve_nibbles(plan, layer0: int, *, name: str, nib: Subspace, ymax: list[int], scale: float,
                    out: Subspace) -> int:
    """Layers L2-L5: add ``(sum_n Y_n 16^n) mod 2^len(out)`` into ``out``.

    ``nib[n]`` holds ``scale * Y_n`` (written by earlier layers, ``0 <= Y_n <= ymax[n]``,
    integer).  Uses the MLPs of layers ``layer0 .. layer0+3``; returns ``layer0 + 4``.
    All-zero nibbles give an all-zero result (every threshold is >= 1).
    """
    width = len(out)
    nn = len(nib)
    if nn * NIB < width:
        raise ValueError(f"{name}: {nn} nibbles cannot cover {width} result bits")
    nbytes = (width + BYTE - 1) // BYTE
    inv = 1.0 / scale
    L2, L3, L4, L5 = (plan.mlp(layer0 + i) for i in range(4))

    # ---- L2: nibble split (in place) --------------------------------------------------
    hmax = []
    for n in range(nn):
        h = ymax[n] // 16
        hmax.append(h)
        for q in range(1, h + 1):
            outs = [(nib[n], -16.0 * scale)]
            if n + 1 < nn:
                outs.append((nib[n + 1], scale))
            L2.gate(f"{name}.h{n}.{q}", [(nib[n], inv)], 16 * q, outs)
    zmax = [min(15, ymax[n]) + (hmax[n - 1] if n else 0) for n in range(nn)]
    for n in range(nn):  # what the nibbles hold from the split on, when dim reuse clears them
        plan.layout.claim([nib[n]], 0.0, zmax[n] * scale)

    # ---- digit bookkeeping ------------------------------------------------------------
    # digit (n, s) sits at result position p = 4n + s, byte p // 8, weight 2^(p mod 8)
    ndig = [max(1, zmax[n].bit_length()) if zmax[n] else 0 for n in range(nn)]
    by_byte: dict[int, list[tuple[int, int]]] = {k: [] for k in range(nbytes)}  # (n, s)
    for n in range(nn):
        for s in range(ndig[n]):
            p = NIB * n + s
            if p < width:
                by_byte[p // BYTE].append((n, s))

    def part_max(k: int, t: int) -> int:
        """max of x_t, the byte-k digits of weight < 2^(t+1) (nibbles are independent)."""
        total = 0
        for n in range(nn):
            # digits of nibble n at in-byte positions 0..t of byte k
            lo_pos = NIB * n  # position of digit 0
            base = BYTE * k
            s_lo = max(0, base - lo_pos)
            s_hi = min(ndig[n], base + t + 1 - lo_pos)
            if s_hi > s_lo:
                total += _piece_max(zmax[n], s_lo, s_hi, lo_pos + s_lo - base)
        return total

    wmax = [part_max(k, min(BYTE, width - BYTE * k) - 1) for k in range(nbytes)]
    for k in range(nbytes - 1):
        if wmax[k] + 1 >= 512:
            raise ValueError(f"{name}: byte {k} can reach {wmax[k]}; carries would not be single bits")

    # carry into byte k possible?  c_0 = 0; c_{k+1} possible iff W_k + c_k can reach 256
    can_carry = [False] * nbytes
    for k in range(nbytes - 1):
        can_carry[k + 1] = wmax[k] + (1 if can_carry[k] else 0) >= 256

    # which result bits are a single digit (no carry in, nothing below can overflow into it)
    direct: dict[int, tuple[int, int]] = {}
    for k in range(nbytes):
        if can_carry[k]:
            continue
        nbits = min(BYTE, width - BYTE * k)
        for t in range(nbits):
            ds = [(n, s) for (n, s) in by_byte[k] if NIB * n + s == BYTE * k + t]
            below = part_max(k, t - 1) if t else 0
            if len(ds) == 1 and below < (1 << t):
                direct[BYTE * k + t] = ds[0]
    need_dim = set()
    for k in range(nbytes):
        nbits = min(BYTE, width - BYTE * k)
        if all(BYTE * k + t in direct for t in range(nbits)) and not (k + 1 < nbytes and can_carry[k + 1]):
            continue  # the whole byte is direct digits and feeds no carry
        for (n, s) in by_byte[k]:
            need_dim.add((n, s))
    dig_list = sorted(need_dim)
    dig = plan.layout.alloc(f"{name}.dig", len(dig_list)) if dig_list else None
    dig_dim = {ns: dig[i] for i, ns in enumerate(dig_list)}

    # ---- L3: digits of every Z_n ------------------------------------------------------
    for n in range(nn):
        for j in range(1, zmax[n] + 1):
            outs = []
            for s in range(ndig[n]):
                if j % (1 << s):
                    continue
                sign = 1.0 if (j >> s) & 1 else -1.0
                p = NIB * n + s
                if (n, s) in dig_dim:
                    outs.append((dig_dim[(n, s)], sign))
                if p in direct and direct[p] == (n, s):
                    outs.append((out[p], sign))
            if outs:
                L3.gate(f"{name}.z{n}.{j}", [(nib[n], inv)], j, outs)

    def x_terms(k: int, t: int):
        """(dim, weight) of the byte-k digits of weight < 2^(t+1)."""
        terms = []
        for (n, s) in by_byte[k]:
            w = NIB * n + s - BYTE * k
            if w <= t:
                terms.append((dig_dim[(n, s)], float(1 << w)))
        return terms

    # ---- L4: generate / propagate as look-ahead sums --------------------------------------
    # c_{j+1} = G_j or (P_j and c_j);  c_k = [E_k >= 2^k],  E_k = sum_{j<k} (G_j + P_j) 2^j.
    # Where no carry can enter byte j, P_j is replaced by G_j (same carries, one gate less).
    carry_k = [k for k in range(1, nbytes) if can_carry[k]]
    esum = plan.layout.alloc(f"{name}.carry", len(carry_k)) if carry_k else None
    e_dim = {k: esum[i] for i, k in enumerate(carry_k)}
    e_max = {k: 0 for k in carry_k}
    for j in range(nbytes - 1):
        targets = [k for k in carry_k if k > j]
        if not targets:
            continue
        if wmax[j] >= 256:
            wt = x_terms(j, BYTE - 1)
            gw = 1 << j if can_carry[j] else 2 << j
            L4.gate(f"{name}.G{j}", wt, 256, [(e_dim[k], float(gw)) for k in targets])
            for k in targets:
                e_max[k] += gw
        if can_carry[j] and wmax[j] >= 255:
            wt = x_terms(j, BYTE - 1)
            L4.gate(f"{name}.P{j}", wt, 255, [(e_dim[k], float(1 << j)) for k in targets])
            for k in targets:
                e_max[k] += 1 << j

    # ---- L5: result bits ----------------------------------------------------------------
    for k in range(nbytes):
        nbits = min(BYTE, width - BYTE * k)
        for t in range(nbits):
            p = BYTE * k + t
            if p in direct:
                continue
            xt = x_terms(k, t)
            xm = part_max(k, t)
            if can_carry[k]:
                # c = [E >= 2^k], E in [0, 2^(k+1)-2]:  [x + c >= th] == [M x + E >= M th], M = 2^k
                M = 1 << k
                assert e_max[k] <= 2 * M - 2
                terms = [(d, M * w) for d, w in xt] + [(e_dim[k], 1.0)]
                qmax = (xm + 1) >> t
            else:
                M = 1
                terms = xt
                qmax = xm >> t
            for q in range(1, qmax + 1):
                sign = 1.0 if q & 1 else -1.0
                L5.gate(f"{name}.r{p}.{q}", terms, M * (q << t), [(out[p], sign)])
    return layer0 + 4


def _scale_for(ymax: list[int]) -> float:
    return 2.0 ** -int(max(max(ymax), 1)).bit_length()


def build_mul_family(plan, layer0: int, *, name: str, a: Subspace, b: Subspace, c: Subspace,
                     op: dict[str, int], out: Subspace) -> int:
    """``out += (a*b) mod 2^32`` if ``op["mul"]``, ``(a*b + c) mod 2^32`` if ``op["mad"]``, else 0.

    Uses the MLPs of layers ``layer0 .. layer0+4``; returns ``layer0 + 5``.
    """
    width = len(out)
    unknown = set(op) - {"mul", "mad"}
    if unknown:
        raise ValueError(f"{name}: unknown ops {sorted(unknown)}")
    sel = [(op[k], 1.0) for k in ("mul", "mad") if k in op]
    if not sel:
        raise ValueError(f"{name}: no op bit given")
    nn = (width + NIB - 1) // NIB
    ymax = [0] * nn
    pps = []
    for i in range(min(len(a), width)):
        for j in range(min(len(b), width - i)):
            pps.append((i, j))
            ymax[(i + j) // NIB] += 1 << ((i + j) % NIB)
    addend = []
    if "mad" in op:
        for i in range(min(len(c), width)):
            addend.append(i)
            ymax[i // NIB] += 1 << (i % NIB)
    scale = _scale_for(ymax)
    nib = plan.layout.alloc(f"{name}.nib", nn)
    L1 = plan.mlp(layer0)
    for i, j in pps:
        m = i + j
        L1.gate(f"{name}.pp{i}.{j}", [(a[i], 1.0), (b[j], 1.0)] + sel, 3,
                [(nib[m // NIB], (1 << (m % NIB)) * scale)])
    for i in addend:
        L1.gate(f"{name}.c{i}", [(c[i], 1.0), (op["mad"], 1.0)], 2,
                [(nib[i // NIB], (1 << (i % NIB)) * scale)])
    return resolve_nibbles(plan, layer0 + 1, name=name, nib=nib, ymax=ymax, scale=scale, out=out)


def build_multi_add(plan, layer0: int, *, name: str, terms: list[tuple[Subspace, int | None]],
                    out: Subspace, enable: int | None = None) -> int:
    """``out += (sum of the terms) mod 2^len(out)``; a term ``(word, mask)`` counts only when
    its mask dim is 1 (``mask=None``: always), and nothing is written unless ``enable`` is 1
    (``enable=None``: always).

    Uses the MLPs of layers ``layer0 .. layer0+4``; returns ``layer0 + 5``.
    """
    width = len(out)
    if not terms:
        raise ValueError(f"{name}: no terms")
    nn = (width + NIB - 1) // NIB
    ymax = [0] * nn
    for word, _ in terms:
        for i in range(min(len(word), width)):
            ymax[i // NIB] += 1 << (i % NIB)
    scale = _scale_for(ymax)
    nib = plan.layout.alloc(f"{name}.nib", nn)
    L1 = plan.mlp(layer0)
    for ti, (word, mask) in enumerate(terms):
        cond = [(d, 1.0) for d in (mask, enable) if d is not None]
        for i in range(min(len(word), width)):
            L1.gate(f"{name}.t{ti}.{i}", [(word[i], 1.0)] + cond, 1 + len(cond),
                    [(nib[i // NIB], (1 << (i % NIB)) * scale)])
    return resolve_nibbles(plan, layer0 + 1, name=name, nib=nib, ymax=ymax, scale=scale, out=out)
