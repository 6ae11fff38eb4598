"""The three execution paths of a compiled circuit agree, token for token.

A small but complete circuit (hidden 256, intermediate 512, 5 layers, the
full-attention layer 3 inert) does pointer chasing with a running sum:

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

Paths: (a) ``CircuitRunner`` over ``compact(plan)``; (b) our dense ``Model`` with
``plan.weights()``; (c) the checkpoint of ``save_checkpoint`` loaded by unmodified
``mlx_lm.load`` and decoded by mlx-lm's ``generate_step`` (greedy).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import mlx.core as mx

from qwengpu_mlx.runtime.checkpoint import save_checkpoint
from qwengpu_mlx.compiler.compact import compact
from qwengpu_mlx.runtime.layer_probe import load_plan, probe
from qwengpu_mlx.runtime.model import Model
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
from tests.support.circuits import G, MEMORY, N_GEN, ROWS, START, build_circuit, expected_run

@pytest.fixture(scope="module")
def circuit():
    plan, ids = build_circuit()
    prompt = []
    for r, (p, w) in MEMORY:
        prompt += [ids["HDR", r], ids["C0", p], ids["C1", w]]
    prompt.append(ids[("S",) + START])
    return plan, ids, prompt


def _dense_greedy(model: Model, prompt, n):
    cache = model.make_cache()
    logits = model(mx.array([prompt]), cache)[0, -1]
    mx.eval(logits)
    toks, lgs, state = [], [logits], None
    for i in range(n):
        t = int(mx.argmax(logits))
        toks.append(t)
        if i == 0:
            state = [np.array(model.recurrent_state(cache, L)) for L in (0, 4)]
        logits = model(mx.array([[t]]), cache)[0, -1]
        mx.eval(logits)
        lgs.append(logits)
    return toks, [np.array(x) for x in lgs[:n]], state


def _runner_greedy(runner: CircuitRunner, prompt, n):
    runner.reset()
    runner.track_margins = True
    logits = runner.step(prompt)
    toks, lgs, state = [], [np.array(logits)], None
    for i in range(n):
        t = int(mx.argmax(logits))
        toks.append(t)
        if i == 0:
            state = {(L, h): runner.recurrent_state(L, h) for L, h in ((0, 0), (4, 0))}
        logits = runner.step([t])
        lgs.append(np.array(logits))
    return toks, lgs[:n], state


def test_three_paths_agree(circuit, tmp_path):
    import mlx_lm
    from mlx_lm.generate import generate_step
    from mlx_lm.sample_utils import make_sampler

    plan, ids, prompt = circuit
    mem_expected, names_expected = expected_run()
    vocab = plan.vocab
    K = plan.levels.K

    # (b) dense model with plan.weights()
    dense = load_plan(plan)
    b_toks, b_logits, b_state = _dense_greedy(dense, prompt, N_GEN)

    # (a) fast runner over compact(plan)
    runner = CircuitRunner(compact(plan))
    a_toks, a_logits, a_state = _runner_greedy(runner, prompt, N_GEN)

    # (c) checkpoint (one shard per layer, as `build` writes a 2B-shaped one) -> unmodified
    # mlx_lm.load -> mlx-lm's generation loop
    n = 1 + len(plan.layers)
    save_checkpoint(tmp_path, plan.config(), plan.weight_shards(), vocab, eos_token="<STOP>", shards=n)
    assert len(list(tmp_path.glob("model-*-of-*.safetensors"))) == n
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())["weight_map"]
    assert set(index) == set(plan.weights())
    lm, tok = mlx_lm.load(str(tmp_path))
    c_toks, c_logprobs = [], []
    for t, lp in generate_step(mx.array(prompt), lm, max_tokens=N_GEN, sampler=make_sampler(temp=0.0)):
        c_toks.append(int(t))
        c_logprobs.append(np.array(lp))

    # the same tokens, and the ones computed independently
    names = [vocab[t] for t in a_toks]
    assert names == names_expected
    assert a_toks == b_toks == c_toks
    assert tok.decode(c_toks) == "".join(names_expected)
    assert names.count("<STOP>") == 4  # the chain hits a visited row and stops

    # the gates kept their full margin (0.5 bit) in the fast path
    margin = runner.min_margin
    assert 0.49 < margin <= 0.5, margin

    # logits: (a) vs (b) within rounding; (b) vs (c) bit for bit (same model, same weights)
    d_logit = max(float(np.max(np.abs(x - y))) for x, y in zip(a_logits, b_logits))
    assert d_logit < 1e-2, d_logit
    b_logprobs = [np.array(mx.array(x) - mx.logsumexp(mx.array(x), keepdims=True)) for x in b_logits]
    d_lp = max(float(np.max(np.abs(x - y))) for x, y in zip(b_logprobs, c_logprobs))
    assert d_lp == 0.0, d_lp
    # after an S token the circuit's code wins by ~2 * OUT_GAIN (one flipped code bit);
    # after STOP nothing is written and the token's own code (+-1) repeats it
    inputs = [prompt[-1]] + a_toks[:-1]
    for t, lg in zip(inputs, b_logits):
        top2 = np.sort(lg)[-2:]
        assert top2[1] - top2[0] > (G if t != ids["STOP"] else 3)

    # recurrent states after the prompt: memory head (layer 0) and visited head (layer 4)
    d_state = 0.0
    for (L, h), st in a_state.items():
        ref = b_state[(0, 4).index(L)][0, h]
        d_state = max(d_state, float(np.max(np.abs(st - ref))))
    assert d_state < 1e-4, d_state
    # ... and they hold what the prompt wrote: column r = row r, b rail at even channels
    mem_state = b_state[0][0, 0]
    for r in range(ROWS):
        bits = mem_state[0:16:2, r] > 32  # a stored one is silu(64) = 64
        got = sum(int(b) << i for i, b in enumerate(bits))
        if r in mem_expected:
            p, w = mem_expected[r]
            assert got == p | w << 4, (r, got)
            assert np.all((mem_state[0:16:2, r] > 32) != (mem_state[1:16:2, r] > 32))  # dual rail
        else:
            assert not np.any(mem_state[:, r]), r
    seen_state = b_state[1][0, 0]
    assert set(np.nonzero(seen_state[0] > 32)[0]) == {START[0]}  # only the prompt's S token so far
    # layer 0's second head is the ONE1 constant (one row holding a stored one); the
    # other heads of the dense layers stay empty
    one1 = b_state[0][0, 1]
    assert one1[0, 0] > 32 and np.count_nonzero(one1) == 1
    assert not np.any(b_state[0][0, 2:]) and not np.any(b_state[1][0, 1:])

    # residuals after every layer over the whole sequence: (a) vs (b); layer 3's
    # attention is inert (its mixer adds exactly nothing)
    seq = prompt + a_toks
    pr = probe(dense, seq)
    assert np.array_equal(pr["mid"][3], pr["resid"][3])
    runner.reset()
    _, trace = runner.forward(runner.embed(seq), keep=True)
    d_resid = 0.0
    for L, (x, ref) in enumerate(zip(trace, pr["resid"])):
        x = np.array(x, np.float64)
        assert np.array_equal(x[:, plan.layout.ONE], ref[:, plan.layout.ONE])  # ONE is never written
        assert np.all(x[:, plan.layout.ONE] == K)
        d_resid = max(d_resid, float(np.max(np.abs(x - ref))))
    assert d_resid < 1e-3, d_resid

    # (b) and (c) on the whole sequence in one pass: the same logits, bit for bit
    c_full = np.array(lm(mx.array([seq]))[0])
    assert np.array_equal(c_full, pr["logits"].astype(np.float32))
    assert np.array_equal(c_full[len(prompt) - 1:-1].argmax(-1), np.array(a_toks))
    print(f"\nmax |diff|: logits a-b {d_logit:.3g}, logprobs b-c {d_lp:.3g}, "
          f"state a-b {d_state:.3g}, residual a-b {d_resid:.3g}; min gate margin {margin:.6f} bit")
