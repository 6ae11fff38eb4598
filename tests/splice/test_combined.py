"""The circuit spliced into a base Qwen3.5 model: one checkpoint, text untouched, launches exact.

A small complete circuit (``test_equivalence``'s pointer chase, 5 layers) goes into
random Qwen3.5 bases with Qwen-like statistics (embedding scale, massive dims), once
with as many value heads as key heads (Qwen3.5-2B's geometry) and once with two value
heads per key head (4B's). The combined checkpoint is loaded by unmodified mlx-lm:

* on text it gives the base's logits bit for bit (a float32 base) and
  the base's greedy tokens; launch tokens hold under 1e-6 of the probability;
* a launch gives the circuit-only model's tokens, and the expected ones.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlx.core as mx

from qwengpu_mlx.runtime.checkpoint import random_config
from qwengpu_mlx.splice.build import SpliceMisfit, check_fits, write_combined
from qwengpu_mlx.splice.layout import SpliceLayout, splice_misfits
from qwengpu_mlx.splice.logits import base_logits, final_hidden, launch_mass_from_logits
from qwengpu_mlx.splice.random_base import qwen_like_weights

from tests.support.circuits import MEMORY, N_GEN, START, build_circuit, expected_run

BASE_HIDDEN = 96  # 3 x 96 >= the circuit's 256 dims
BASE_VOCAB = 300


def _base(value_heads: int, seed: int):
    from mlx_lm.models.qwen3_5 import Model, ModelArgs

    cfg = random_config(BASE_HIDDEN, 4, vocab_size=BASE_VOCAB, intermediate=512, linear_key_heads=4,
                        linear_value_heads=value_heads, linear_key_dim=16, linear_value_dim=32, heads=4,
                        kv_heads=2, head_dim=16)
    full = {"model_type": "qwen3_5", "text_config": cfg, "tie_word_embeddings": True}
    model = Model(ModelArgs.from_dict(full))
    model.load_weights(list(qwen_like_weights(cfg, seed=seed).items()), strict=True)
    mx.eval(model.parameters())
    return model, full


def _greedy(model, prompt: list[int], n: int) -> list[int]:
    from mlx_lm.models.cache import make_prompt_cache

    cache = make_prompt_cache(model)
    logits = model(mx.array([prompt]), cache=cache)[0, -1]
    out = []
    for _ in range(n):
        t = int(mx.argmax(logits))
        out.append(t)
        logits = model(mx.array([[t]]), cache=cache)[0, -1]
    return out


@pytest.fixture(scope="module", params=[(4, None), (8, None), (4, 4)], ids=["2b-heads", "4b-heads", "2b-heads-4bit"])
def spliced(request, tmp_path_factory):
    """The combined checkpoint over a float32 base, or over the same base quantized to 4 bits
    as mlx-lm's own ``convert -q`` does (``nn.quantize``, groups of 32)."""
    import mlx.nn as nn
    from mlx_lm.utils import load_model

    plan, ids = build_circuit()
    heads, bits = request.param
    base, base_cfg = _base(heads, seed=heads)
    if bits:
        nn.quantize(base, group_size=32, bits=bits)
        mx.eval(base.parameters())
        base_cfg = dict(base_cfg, quantization={"group_size": 32, "bits": bits})
    rng = np.random.default_rng(0)
    calibration = rng.integers(0, BASE_VOCAB, 256).tolist()
    out = tmp_path_factory.mktemp(f"combined{heads}-{bits}")
    report = write_combined(out, base, base_cfg, plan, list(plan.vocab), calibration)
    combined, _ = load_model(out)
    return plan, ids, base, combined, report


def test_text_positions_get_the_base_logits_and_tokens(spliced):
    _, _, base, combined, report = spliced
    text = np.random.default_rng(1).integers(0, BASE_VOCAB, 200).tolist()
    want = base(mx.array([text]))[0]
    got = combined(mx.array([text]))[0]
    V = BASE_VOCAB
    assert bool(mx.all(got[:, :V] == want)), float(mx.max(mx.abs(got[:, :V] - want)))  # bit for bit
    mass = launch_mass_from_logits(got[:, :V], got[:, V:])
    assert mass.max < 1e-6, mass
    assert _greedy(combined, text[:8], 40) == _greedy(base, text[:8], 40)


def test_a_launch_in_the_combined_model_is_the_circuit_only_launch(spliced):
    plan, ids, _, combined, report = spliced
    lay = report.layout
    circuit_prompt = [t for r, (p, w) in MEMORY for t in (ids["HDR", r], ids["C0", p], ids["C1", w])]
    circuit_prompt.append(ids[("S",) + START])
    prompt = [lay.launch_id(t) for t in circuit_prompt]
    mem_expected, names_expected = expected_run()
    toks = _greedy(combined, prompt, N_GEN)
    assert [plan.vocab[lay.circuit_id(t)] if lay.circuit_id(t) is not None else None for t in toks] == names_expected


def test_the_circuit_matrices_load_compact_and_exact(spliced):
    """Most circuit matrices are written quantized (``splice/storage.py``); unmodified
    mlx-lm turns each into a quantized layer of its own format, and every circuit matrix
    it computes with is the dense float32 one the splice places, bit for bit."""
    import mlx.nn as nn
    from mlx.utils import tree_flatten
    from qwengpu_mlx.splice.weights import (PREFIX, circuit_dims, circuit_layer, embedding_format, split_layers,
                                            wide_columns)

    plan, _, base, combined, report = spliced
    lay, tally = report.layout, report.storage
    packed = sum(n for fmt, n in tally.matrices.items() if fmt not in ("bfloat16", "float32"))
    assert packed > tally.matrices["float32"]
    modules = dict(combined.named_modules())
    quantized = [p for p, m in modules.items() if isinstance(m, nn.QuantizedLinear) and ".layers." in p
                 and int(p.split("layers.")[1].split(".")[0]) >= lay.base_layers]
    assert len(quantized) == packed
    emb = next(iter(plan.weight_shards()))[PREFIX + "embed_tokens.weight"]
    fmt = embedding_format(dict(tree_flatten(base.parameters())), lay)
    dims = circuit_dims(lay, emb, fmt[0] if fmt else None, wide_columns(plan.weight_shards()))
    checked = 0
    for j, part in enumerate(list(plan.weight_shards())[1:]):
        (params,) = split_layers(part)[1].values()
        i = lay.base_layers + j
        for name, dense in circuit_layer(params, j, lay, dims).items():
            m = modules.get(f"language_model.model.layers.{i}.{name[: -len('.weight')]}")
            if isinstance(m, nn.QuantizedLinear):
                w = mx.dequantize(m.weight, m.scales, m.get("biases"), group_size=m.group_size, bits=m.bits,
                                  mode=m.mode, dtype=mx.float32)
            elif isinstance(m, nn.Linear):
                w = m.weight.astype(mx.float32)
            else:
                continue
            assert mx.array_equal(w, dense).item(), (i, name)
            checked += 1
    assert checked == sum(tally.matrices.values())


def test_a_base_the_circuit_does_not_fit_is_named_by_size():
    plan, _ = build_circuit()
    cfg = random_config(64, 6, intermediate=256)
    problems = splice_misfits(cfg, plan.config())
    assert any(p.startswith("residual width") for p in problems)
    assert any(p.startswith("MLP width") for p in problems)
    assert any(p.startswith("layer count") for p in problems)
    with pytest.raises(SpliceMisfit):
        check_fits(cfg, plan.config())


def test_our_runner_gives_unmodified_mlx_lm_s_tokens_and_logits(spliced):
    from qwengpu_mlx.compiler.compact import compact
    from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
    from qwengpu_mlx.splice.combined_runner import launch_rms_share, load_combined

    plan, ids, base, combined, report = spliced
    ours = load_combined(report.out, CircuitRunner(compact(plan)))
    # the base part, sliced out of the combined tensors and unscaled, is the base bit for bit
    from mlx.utils import tree_flatten
    want = dict(tree_flatten(base.parameters()))
    got = dict(tree_flatten(ours.base.parameters()))
    assert want.keys() == got.keys()
    assert all(bool(mx.all(want[k] == got[k])) for k in want)
    assert launch_rms_share(ours.launch_row) < 2.0 ** -30
    # text: the whole combined vocabulary, launch tokens included, as mlx-lm computes it
    text = np.random.default_rng(2).integers(0, BASE_VOCAB, 64).tolist()
    dense = combined(mx.array([text]))[0]
    mine = ours.text_logits(text)
    assert mine.shape == dense.shape
    assert float(mx.max(mx.abs(mine - dense))) <= 1e-5 * float(mx.max(mx.abs(dense)))
    assert bool(mx.all(mx.argmax(mine, -1) == mx.argmax(dense, -1)))
    # a launch: the circuit runner's tokens, in the combined vocabulary, are mlx-lm's
    circuit_prompt = [t for r, (p, w) in MEMORY for t in (ids["HDR", r], ids["C0", p], ids["C1", w])]
    circuit_prompt.append(ids[("S",) + START])
    runner = ours.circuit
    runner.reset()
    logits = runner.step(circuit_prompt)
    toks = []
    for _ in range(N_GEN):
        toks.append(int(mx.argmax(logits)))
        logits = runner.step([toks[-1]])
    assert ours.launch_ids(toks) == _greedy(combined, ours.launch_ids(circuit_prompt), N_GEN)


def _base_directory(path, seed: int):
    """A small random base written as a standard checkpoint, with a character vocabulary."""
    from qwengpu_mlx.runtime.checkpoint import save_checkpoint

    cfg = random_config(BASE_HIDDEN, 4, vocab_size=BASE_VOCAB, intermediate=512, linear_key_heads=4,
                        linear_value_heads=4, linear_key_dim=16, linear_value_dim=32, heads=4, kv_heads=2, head_dim=16)
    chars = [chr(c) for c in range(32, 127)]
    vocab = chars + [f"w{i}" for i in range(BASE_VOCAB - len(chars))]
    return save_checkpoint(path, cfg, qwen_like_weights(cfg, seed=seed), vocab)


def test_build_from_a_local_base_directory_end_to_end(tmp_path):
    """``build --base DIR``'s pipeline: mlx-lm loads the result with its tokenizer; the
    launch tokens encode to their rows; the manifest holds every base file's SHA-256."""
    import hashlib
    import json

    import mlx_lm

    from qwengpu_mlx.splice.pipeline import build_from_base, sample_text
    from qwengpu_mlx.splice.source import read_manifest

    plan, ids = build_circuit()
    base_dir = _base_directory(tmp_path / "base", seed=9)
    out = tmp_path / "combined"
    report = build_from_base(str(base_dir), out, "default", plan=plan, log=lambda s: None)
    lay = report.layout

    manifest = read_manifest(out)
    for name, digest in manifest["base_files_sha256"].items():
        assert hashlib.sha256((base_dir / name).read_bytes()).hexdigest() == digest
    assert {"config.json", "tokenizer.json", "model.safetensors"} <= set(manifest["base_files_sha256"])

    model, tok = mlx_lm.load(str(out))
    base, base_tok = mlx_lm.load(str(base_dir))
    text = sample_text()[:400]
    ids_text = base_tok.encode(text)
    assert tok.encode(text) == ids_text  # ordinary text: the base's tokens
    for i in (0, 1, len(plan.vocab) - 1):
        assert tok.encode(plan.vocab[i]) == [lay.launch_id(i)]
        assert tok.decode([lay.launch_id(i)]) == plan.vocab[i]
    got = model(mx.array([ids_text]))[0]
    assert bool(mx.all(got[:, :BASE_VOCAB] == base(mx.array([ids_text]))[0]))
    mass = launch_mass_from_logits(got[:, :BASE_VOCAB], got[:, BASE_VOCAB:])
    assert mass.max < 1e-6, mass
    assert json.loads((out / "config.json").read_text())["text_config"]["hidden_size"] == 4 * BASE_HIDDEN
    # drift, as `eval drift` measures it: through unmodified mlx-lm and through our runner
    from qwengpu_mlx.compiler.compact import compact
    from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
    from qwengpu_mlx.splice.drift import measure, mlx_lm_logits, ours_logits
    from qwengpu_mlx.splice.combined_runner import load_combined

    ours = load_combined(out, CircuitRunner(compact(plan)))
    for combined_logits in (mlx_lm_logits(model, ids_text, chunk=64), ours_logits(ours, ids_text, chunk=64)):
        r = measure(mlx_lm_logits(base, ids_text, chunk=64), combined_logits, BASE_VOCAB)
        assert r.positions == len(ids_text) and r.argmax_differs == 0
        assert r.kl_mean < 1e-9 and r.launch_mass_max < 1e-6, r


def test_build_from_a_base_mlx_lm_convert_quantized(tmp_path):
    """A base quantized by mlx-lm's own ``convert -q`` (4-bit, groups of 32, as the
    mlx-community conversions are made): ``build --base`` keeps it quantized, and
    unmodified mlx-lm gives the quantized base's text logits and the launch."""
    import mlx.nn as nn
    import mlx_lm
    from mlx_lm.convert import convert

    from qwengpu_mlx.splice.pipeline import build_from_base

    plan, ids = build_circuit()
    dense_dir = _base_directory(tmp_path / "dense", seed=5)
    q_dir = tmp_path / "q4"
    convert(str(dense_dir), str(q_dir), quantize=True, q_group_size=32, q_bits=4)
    out = tmp_path / "combined"
    report = build_from_base(str(q_dir), out, "default", plan=plan, log=lambda s: None)
    base, _ = mlx_lm.load(str(q_dir))
    model, _ = mlx_lm.load(str(out))
    assert isinstance(model.language_model.model.embed_tokens, nn.QuantizedEmbedding)
    assert isinstance(model.language_model.model.layers[0].mlp.gate_proj, nn.QuantizedLinear)
    text = np.random.default_rng(3).integers(0, BASE_VOCAB, 96).tolist()
    got = model(mx.array([text]))[0]
    assert bool(mx.all(got[:, :BASE_VOCAB] == base(mx.array([text]))[0]))
    assert launch_mass_from_logits(got[:, :BASE_VOCAB], got[:, BASE_VOCAB:]).max < 1e-6
    lay = report.layout
    prompt = [lay.launch_id(t) for r, (p, w) in MEMORY for t in (ids["HDR", r], ids["C0", p], ids["C1", w])]
    prompt.append(lay.launch_id(ids[("S",) + START]))
    toks = _greedy(model, prompt, N_GEN)
    assert [plan.vocab[lay.circuit_id(t)] if lay.circuit_id(t) is not None else None for t in toks] == \
        expected_run()[1]
