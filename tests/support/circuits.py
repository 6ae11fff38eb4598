"""A small but complete circuit that does pointer chasing with a running sum, and its expected run.

Hidden 256, intermediate 512, 5 layers, the full-attention layer 3 inert:

* ``HDR(r) C0(p) C1(w)`` records write row ``r`` of a DeltaNet memory head (layer 0)
  with ``p`` (4-bit next pointer) and ``w`` (4-bit payload): the key comes from the
  header two tokens back, the value chunks from the two conv taps after it.
* ``S(a, acc)`` reads row ``a``; MLPs 0..2 add ``w`` to the 8-bit accumulator
  (``compiler.alu_add.build_add32``) and decode ``p`` to a one-hot.
* A second memory head (layer 4) remembers which addresses ``S`` tokens visited:
  ``S(a, .)`` writes ``seen[a] = 1`` and reads ``seen[p]`` (write before read).
* MLP 4 writes ``OUT_GAIN`` times the output code of ``S(p, (acc + w) mod 256)``, or of
  ``STOP`` when ``p`` was visited; the final norm passes only the output-code dims, so
  the tied embedding turns that into the next token.

``build_circuit()`` returns the plan and the token ids, ``expected_run()`` the memory the
prompt (``MEMORY``, then ``S`` of ``START``) writes and the ``N_GEN`` tokens to emit.
"""

from __future__ import annotations

import numpy as np

from qwengpu_mlx.compiler.alu_add import build_add32
from qwengpu_mlx.compiler.assemble import CircuitPlan, Shape
from qwengpu_mlx.compiler.deltanet import CURRENT
from qwengpu_mlx.compiler.residual import ResidualLayout
from qwengpu_mlx.compiler.tokens import OUT_GAIN

G = OUT_GAIN
KINDS = ["S", "HDR", "C0", "C1", "STOP"]
ROWS = 16
# The memory the prompt writes: row -> (next pointer, payload). The chain from row 2
# is 2 -> 9 -> 4 -> 13 -> 7 -> 0 -> 11 -> 4 (visited: STOP). Row 13 is written twice
# (the second record wins); rows 5, 6 and 15 are distractors.
MEMORY = [(13, (1, 3)), (2, (9, 7)), (9, (4, 15)), (5, (6, 1)), (4, (13, 2)), (13, (7, 11)),
          (7, (0, 9)), (6, (5, 5)), (0, (11, 14)), (11, (4, 6)), (15, (15, 15))]
START = (2, 250)  # S(2, 250): the sum wraps past 255
N_GEN = 10


def build_circuit():
    shape = Shape(hidden=256, intermediate=512, linear_heads=4, key_dim=16, value_dim=32)
    lay = ResidualLayout(shape.hidden)
    kind = {k: lay.alloc(f"tok.{k}", 1)[0] for k in KINDS}
    hdr = lay.alloc("tok.hdr.row", ROWS)  # one-hot
    chunk = [lay.alloc(f"tok.c{j}.bits", 4) for j in range(2)]
    s_addr = lay.alloc("tok.s.addr", ROWS)  # one-hot
    acc = lay.alloc("tok.s.acc", 32)  # bits 0..7 used
    p = lay.alloc("rd.p", 4)
    wv = lay.alloc("rd.w", 32)  # bits 0..3 written by the read
    total = lay.alloc("sum", 32)
    p_hot = lay.alloc("p.onehot", ROWS)
    seen = lay.alloc("seen", 1)[0]
    out_class = {k: lay.alloc(f"out.class.{k}", 1)[0] for k in KINDS}
    out_fields = {"S": [lay.alloc("out.S.addr", 4), lay.alloc("out.S.acc", 8)],
                  "HDR": [lay.alloc("out.HDR.row", 4)],
                  "C0": [lay.alloc("out.C0.value", 4)], "C1": [lay.alloc("out.C1.value", 4)]}

    plan = CircuitPlan(shape, lay)
    for _ in range(5):
        plan.new_layer()

    # layer 0: the memory (key: header at tap 1; value: chunk 0 at tap 2, chunk 1 at tap 3)
    mem = plan.mixer(0).head("mem", rows=ROWS, bits=8)
    for r in range(ROWS):
        mem.key(r, hdr[r], tap=CURRENT - 2)
        mem.query(r, s_addr[r])
    for j in range(2):
        for k in range(4):
            mem.value_bit(4 * j + k, chunk[j][k], tap=CURRENT - 1 + j)
    for k in range(4):
        mem.read_bit(k, p[k])
        mem.read_bit(4 + k, wv[k])

    # MLPs 0..2: sum = acc + w; MLP 0 also decodes p to a one-hot (on S tokens)
    assert build_add32(plan, 0, name="acc", a=acc, b=wv, out=total) == 3
    m0 = plan.mlp(0)
    for r in range(ROWS):
        terms = [(kind["S"], 1)] + [(p[i], 1 if r >> i & 1 else -1) for i in range(4)]
        m0.gate(f"dec{r}", terms, 1 + bin(r).count("1"), [(p_hot[r], 1.0)])

    # layer 4: visited addresses (write seen[a] on S(a, .), then read seen[p])
    vis = plan.mixer(4).head("seen", rows=ROWS, bits=1)
    for r in range(ROWS):
        vis.key(r, s_addr[r], tap=CURRENT)
        vis.query(r, p_hot[r])
    vis.value_bit(0, kind["S"], tap=CURRENT)
    vis.read_bit(0, seen)

    # MLP 4: the output code, G * (+-1), of S(p, sum mod 256) or STOP
    m4 = plan.mlp(4)
    classes = lambda k: [(out_class[c], G if c == k else -G) for c in KINDS]  # noqa: E731
    s_fields = [d for sp in out_fields["S"] for d in sp.dims]
    m4.gate("emit", [(kind["S"], 1), (seen, -1)], 1, classes("S") + [(d, -G) for d in s_fields])
    src = [p[i] for i in range(4)] + [total[j] for j in range(8)]
    for d_in, d_out in zip(src, s_fields):
        m4.gate(f"bit{d_out}", [(kind["S"], 1), (seen, -1), (d_in, 1)], 2, [(d_out, 2 * G)])
    m4.gate("stop", [(kind["S"], 1), (seen, 1)], 2, classes("STOP"))

    # vocabulary and tied embedding: input fields, then the bipolar output code
    vocab, rows = [], []

    def tok(name, k, ins, fields):
        x = {kind[k]: 1.0}
        x.update({d: 1.0 for d in ins})
        for c in KINDS:
            x[out_class[c]] = 1.0 if c == k else -1.0
        for sp, val in zip(out_fields.get(k, []), fields):
            for i in range(len(sp)):
                x[sp[i]] = 1.0 if val >> i & 1 else -1.0
        vocab.append(name)
        rows.append(x)
        return len(vocab) - 1

    ids = {"STOP": tok("<STOP>", "STOP", [], [])}
    for r in range(ROWS):
        ids["HDR", r] = tok(f"<HDR{r}>", "HDR", [hdr[r]], [r])
    for j in range(2):
        for v in range(16):
            ids[f"C{j}", v] = tok(f"<C{j}:{v}>", f"C{j}", [chunk[j][i] for i in range(4) if v >> i & 1], [v])
    for a in range(ROWS):
        for s in range(256):
            ids["S", a, s] = tok(f"<S{a}:{s}>", "S", [s_addr[a]] + [acc[i] for i in range(8) if s >> i & 1], [a, s])
    dims = sorted({lay.ONE} | {d for x in rows for d in x})
    col = {d: i for i, d in enumerate(dims)}
    E = np.zeros((len(rows), len(dims)), np.float32)
    E[:, col[lay.ONE]] = plan.levels.K
    for i, x in enumerate(rows):
        for d, v in x.items():
            E[i, col[d]] = v
    plan.vocab = vocab
    plan.embedding_sparse = (np.array(dims, np.int64), E)
    plan.final_norm_dims = sorted(list(out_class.values()) + [d for f in out_fields.values() for sp in f for d in sp.dims])
    return plan, ids


def expected_run():
    """Pointer chasing in Python: the memory after the prompt and the tokens to emit."""
    mem = {}
    for r, v in MEMORY:
        mem[r] = v
    a, s = START
    visited, out = {a}, []
    for _ in range(N_GEN):
        if a is None:
            out.append("<STOP>")
            continue
        p, w = mem[a]
        if p in visited:
            out.append("<STOP>")
            a = None
            continue
        a, s = p, (s + w) % 256
        visited.add(a)
        out.append(f"<S{a}:{s}>")
    return mem, out
