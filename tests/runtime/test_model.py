"""Our Qwen3.5 runtime against mlx-lm's own qwen3_5 classes, loader and generator.

Exactness is bit-for-bit on CPU: logits, recurrent states and conv states compare
with ``np.array_equal`` (a failure message reports the max abs diff).
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import json

import mlx.core as mx
import numpy as np
import pytest
from mlx.utils import tree_flatten
from mlx_lm.models import gated_delta as mlx_gd
from mlx_lm.models import qwen3_5

from qwengpu_mlx.runtime import recurrent
from qwengpu_mlx.runtime.checkpoint import (
    checkpoint_config,
    load_checkpoint,
    random_config,
    random_weights,
    save_checkpoint,
)
from qwengpu_mlx.runtime.model import LinearCache, Model, ModelConfig


def _np(a):
    return np.array(a.astype(mx.float32)) if a.dtype != mx.float32 else np.array(a)


def assert_same(a, b, what=""):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    if not np.array_equal(a, b):
        raise AssertionError(f"{what}: not bit-identical, max abs diff {np.abs(a - b).max()}")


def build_pair(cfg, seed=0, dtype=mx.float32):
    """Our model and mlx-lm's qwen3_5.Model with the same weights."""
    w = random_weights(cfg, seed=seed, dtype=dtype)
    ours = Model(cfg)
    ours.load_weights(list(w.items()), strict=True)
    ref = qwen3_5.Model(qwen3_5.ModelArgs.from_dict(checkpoint_config(cfg)))
    ref.load_weights(list(w.items()), strict=True)
    ref.eval()
    return ours, ref, w


def tokens(B, T, vocab, seed=0):
    return mx.array(np.random.RandomState(seed).randint(0, vocab, (B, T)))


CONFIGS = [
    pytest.param(dict(layers=4, tie=True), id="4L-tied"),
    pytest.param(dict(layers=8, tie=False), id="8L-untied"),
    pytest.param(
        dict(layers=6, tie=True, full_attention_interval=3, linear_key_heads=1, linear_value_heads=4),
        id="6L-interval3-Hv4Hk1",
    ),
    pytest.param(
        dict(layers=4, tie=False, linear_key_heads=2, linear_value_heads=2, linear_key_dim=32,
             linear_value_dim=8),
        id="4L-Dk32-Dv8",
    ),
]


# ---------------------------------------------------------------- (a) forward


@pytest.mark.parametrize("kw", CONFIGS)
def test_forward_matches_mlx_lm(kw):
    cfg = random_config(64, **kw)
    ours, ref, _ = build_pair(cfg, seed=1)
    toks = tokens(2, 12, cfg["vocab_size"])

    assert_same(ours(toks), ref(toks), "prefill without cache")

    c_ours, c_ref = ours.make_cache(batch_size=2), ref.make_cache()
    assert_same(ours(toks[:, :5], c_ours), ref(toks[:, :5], c_ref), "prefill with cache")
    for t in range(5, 12):
        step = toks[:, t : t + 1]
        assert_same(ours(step, c_ours), ref(step, c_ref), f"token {t}")


def test_forward_bf16_and_kv_growth():
    """bf16 weights; the KV cache crosses its 256-position growth step."""
    cfg = random_config(64, layers=4, tie=False)
    ours, ref, _ = build_pair(cfg, seed=2, dtype=mx.bfloat16)
    toks = tokens(1, 262, cfg["vocab_size"], seed=3)
    c_ours, c_ref = ours.make_cache(), ref.make_cache()
    out = ours(toks[:, :254], c_ours)
    assert out.dtype == mx.bfloat16
    assert_same(out, ref(toks[:, :254], c_ref), "bf16 prefill")
    for t in range(254, 262):
        step = toks[:, t : t + 1]
        assert_same(ours(step, c_ours), ref(step, c_ref), f"bf16 token {t}")


def test_same_parameter_names_as_mlx_lm():
    cfg = random_config(64, layers=8, tie=False)
    ours = dict(tree_flatten(Model(cfg).parameters()))
    ref = dict(tree_flatten(qwen3_5.Model(qwen3_5.ModelArgs.from_dict(checkpoint_config(cfg))).parameters()))
    assert {k: v.shape for k, v in ours.items()} == {k: v.shape for k, v in ref.items()}


def test_config_reading_matches_mlx_lm():
    """Nested and flat configs; rope_parameters wins over flat rope keys (as in mlx-lm)."""
    cfg = random_config(64, layers=4, rope_theta=1234.0)
    full = checkpoint_config(cfg)
    ta = qwen3_5.TextModelArgs.from_dict(full["text_config"])
    for source in (cfg, full, full["text_config"]):
        mc = ModelConfig.from_dict(json.loads(json.dumps(source)))
        assert (mc.rope_theta, mc.partial_rotary_factor, mc.head_dim) == (
            ta.rope_theta, ta.partial_rotary_factor, ta.head_dim)
    assert ta.rope_theta == 1234.0
    flat_only = {k: v for k, v in cfg.items() if k != "rope_parameters"} | {"rope_theta": 99.0}
    assert ModelConfig.from_dict(flat_only).rope_theta == qwen3_5.TextModelArgs.from_dict(flat_only).rope_theta == 100000


# ------------------------------------------------- (c) recurrent state readout


@pytest.mark.parametrize("kw", CONFIGS[:3])
def test_recurrent_state_matches_mlx_lm_cache(kw):
    cfg = random_config(64, **kw)
    ours, ref, _ = build_pair(cfg, seed=4)
    toks = tokens(2, 9, cfg["vocab_size"], seed=5)
    c_ours, c_ref = ours.make_cache(batch_size=2), ref.make_cache()
    ours(toks[:, :6], c_ours)
    ref(toks[:, :6], c_ref)
    for t in range(6, 9):
        ours(toks[:, t : t + 1], c_ours)
        ref(toks[:, t : t + 1], c_ref)
    c = ours.config
    linear = ours.linear_layers()
    assert linear == [i for i in range(c.num_hidden_layers) if (i + 1) % c.full_attention_interval]
    for layer in linear:
        s = ours.recurrent_state(c_ours, layer)
        assert s.dtype == mx.float32
        assert s.shape == (2, c.linear_num_value_heads, c.linear_value_head_dim, c.linear_key_head_dim)
        assert_same(s, c_ref[layer][1], f"state of layer {layer}")
        assert_same(c_ours[layer].conv_state, c_ref[layer][0], f"conv state of layer {layer}")
    with pytest.raises(ValueError):
        ours.recurrent_state(c_ours, c.full_attention_interval - 1)


def test_set_recurrent_state_acts_like_mlx_lm_cache_state():
    cfg = random_config(64, layers=4)
    ours, ref, _ = build_pair(cfg, seed=6)
    toks = tokens(1, 4, cfg["vocab_size"], seed=7)
    c_ours, c_ref = ours.make_cache(), ref.make_cache()
    ours(toks[:, :3], c_ours)
    ref(toks[:, :3], c_ref)
    new = mx.random.normal(c_ref[1][1].shape, key=mx.random.key(8))
    ours.set_recurrent_state(c_ours, 1, new)
    c_ref[1][1] = new
    assert_same(ours(toks[:, 3:], c_ours), ref(toks[:, 3:], c_ref), "after state write")


def test_prefill_and_stepwise_states_agree():
    cfg = random_config(64, layers=4)
    ours, _, _ = build_pair(cfg, seed=9)
    toks = tokens(1, 7, cfg["vocab_size"], seed=10)
    a, b = ours.make_cache(), ours.make_cache()
    ours(toks, a)
    for t in range(7):
        ours(toks[:, t : t + 1], b)
    for layer in ours.linear_layers():
        assert_same(ours.recurrent_state(a, layer), ours.recurrent_state(b, layer), f"layer {layer}")
    assert isinstance(a[0], LinearCache) and a[0].offset == 7


# ------------------------------------------------------ (d) recurrence ops


@pytest.mark.parametrize("Hk,Hv,Dk,Dv,T", [(2, 4, 16, 16, 5), (1, 3, 64, 32, 3), (4, 4, 128, 128, 2)])
def test_ops_recurrence_matches_mlx_lm_gated_delta_ops(Hk, Hv, Dk, Dv, T):
    B = 2
    keys = mx.random.split(mx.random.key(11), 8)
    q = mx.random.normal((B, T, Hk, Dk), key=keys[0])
    k = mx.random.normal((B, T, Hk, Dk), key=keys[1])
    q, k = recurrent.normalize_qk(q, k, inv_scale=Dk**-0.5)
    v = mx.random.normal((B, T, Hv, Dv), key=keys[2])
    a = mx.random.normal((B, T, Hv), key=keys[3])
    b = mx.random.normal((B, T, Hv), key=keys[4])
    A_log = mx.random.normal((Hv,), key=keys[5])
    dt_bias = mx.random.normal((Hv,), key=keys[6])
    state = mx.random.normal((B, Hv, Dv, Dk), key=keys[7])

    g = recurrent.compute_g(A_log, a, dt_bias)
    assert_same(g, mlx_gd.compute_g(A_log, a, dt_bias), "g")
    beta = mx.sigmoid(b)
    y1, s1 = recurrent.gated_delta_ops(q, k, v, g, beta, state)
    y2, s2 = mlx_gd.gated_delta_ops(q, k, v, g, beta, state)
    assert_same(y1, y2, "y")
    assert_same(s1, s2, "state")

    y1, s1 = recurrent.gated_delta_update(q, k, v, a, b, A_log, dt_bias, None, use_kernel=False)
    y2, s2 = mlx_gd.gated_delta_update(q, k, v, a, b, A_log, dt_bias, None, use_kernel=False)
    assert_same(y1, y2, "y (update, zero state)")
    assert_same(s1, s2, "state (update, zero state)")

    # One-token step, heads already matched.
    rep = Hv // Hk
    qs, ks = mx.repeat(q[:, 0], rep, -2), mx.repeat(k[:, 0], rep, -2)
    y1, s1 = recurrent.gated_delta_step_ops(qs, ks, v[:, 0], g[:, 0], beta[:, 0], state)
    y2, s2 = mlx_gd._gated_delta_step_ops(qs, ks, v[:, 0], g[:, 0], beta[:, 0], state)
    assert_same(y1, y2, "y (step)")
    assert_same(s1, s2, "state (step)")


def test_one_hot_write_replaces_a_column():
    """State layout: a one-hot key e_j (g = beta = 1) writes v into column j."""
    Dk, Dv = 16, 8
    state = mx.random.normal((1, 1, Dv, Dk), key=mx.random.key(12))
    k = mx.zeros((1, 1, 1, Dk)).at[..., 5].add(1.0)
    v = mx.arange(Dv, dtype=mx.float32).reshape(1, 1, 1, Dv)
    ones = mx.ones((1, 1, 1))
    y, new = recurrent.gated_delta_ops(k, k, v, ones, ones, state)
    assert_same(new[0, 0, :, 5], v[0, 0, 0], "written column")
    keep = np.array([j for j in range(Dk) if j != 5])
    assert_same(new[0, 0][:, mx.array(keep)], state[0, 0][:, mx.array(keep)], "other columns")
    assert_same(y[0, 0, 0], v[0, 0, 0], "read-after-write")


# -------------------------------------------- (b) checkpoint -> mlx_lm.load


VOCAB = ["<eos>", "<pad>", " ", "VAL_1", "MEM 3", "a b", "\n", "é", "日本"] + [f"t{i}" for i in range(85)]


@pytest.mark.parametrize("tie", [True, False])
def test_checkpoint_loads_in_mlx_lm_and_generates_the_same(tmp_path, tie):
    import mlx_lm
    from mlx_lm.generate import generate_step
    from mlx_lm.sample_utils import make_sampler

    cfg = random_config(64, layers=8, tie=tie, vocab_size=100)
    w = random_weights(cfg, seed=13 + tie)
    save_checkpoint(tmp_path, cfg, w, VOCAB, eos_token="<eos>", special_tokens=["<pad>"])

    written = json.loads((tmp_path / "config.json").read_text())
    assert written["model_type"] == "qwen3_5"
    assert written["text_config"]["tie_word_embeddings"] is tie

    model, tok = mlx_lm.load(str(tmp_path))
    assert isinstance(model, qwen3_5.Model)
    # mlx_lm.load leaves every tensor as saved (no +1 norm shift, no conv transpose).
    loaded = dict(tree_flatten(model.parameters()))
    assert set(loaded) == set(w)
    for k, v in w.items():
        assert loaded[k].dtype == v.dtype, k
        assert_same(loaded[k], v, k)

    ours, config = load_checkpoint(tmp_path)
    assert config == written
    prompt = [10, 11, 12, 13, 14, 3, 4]
    ref_tokens = [
        int(t)
        for t, _ in generate_step(
            mx.array(prompt), model, max_tokens=12, sampler=make_sampler(temp=0.0)
        )
    ]
    cache = ours.make_cache()
    logits = ours(mx.array([prompt]), cache)
    our_tokens = []
    for _ in range(12):
        t = int(mx.argmax(logits[0, -1]))
        our_tokens.append(t)
        logits = ours(mx.array([[t]]), cache)
    assert our_tokens == ref_tokens
    assert len(set(our_tokens)) > 3  # the random model does not just echo
    # Our model also runs under mlx-lm's generation loop (make_cache / cache.state).
    ours_in_mlx_lm = [
        int(t)
        for t, _ in generate_step(
            mx.array(prompt), ours, max_tokens=12, sampler=make_sampler(temp=0.0)
        )
    ]
    assert ours_in_mlx_lm == ref_tokens

    # Tokenizer: ids are list positions, decode gives the strings back.
    assert len(tok._tokenizer) == len(VOCAB)
    assert tok.eos_token_ids == {0}
    assert [tok.decode([i]) for i in range(len(VOCAB))] == VOCAB
    assert tok.decode([3, 2, 4, 6, 7, 8]) == "VAL_1 MEM 3\né日本"
    assert tok.encode("VAL_1 MEM 3\nt7t12 a b<eos>", add_special_tokens=False) == [3, 2, 4, 6, 16, 21, 2, 5, 0]
    det = tok.detokenizer
    det.reset()
    for i in [3, 2, 4, 6, 7, 8, 16]:
        det.add_token(i)
    det.finalize()
    assert det.text == "VAL_1 MEM 3\né日本t7"


def test_hf_layout_is_sanitized_like_mlx_lm():
    """Our sanitize = mlx-lm's for HF-layout files (conv axis, zero-centred norms)."""
    cfg = random_config(64, layers=4)
    w = random_weights(cfg, seed=15)
    hf = {}
    for k, v in w.items():
        k2 = k.replace("language_model.model.", "model.language_model.")
        if "conv1d.weight" in k:
            v = v.moveaxis(1, 2)
        elif v.ndim == 1 and k.endswith(("layernorm.weight", "model.norm.weight", "q_norm.weight", "k_norm.weight")):
            v = v - 1.0
        hf[k2] = v
    ours = Model(cfg).sanitize(hf)
    ref = qwen3_5.Model(qwen3_5.ModelArgs.from_dict(checkpoint_config(cfg))).sanitize(dict(hf))
    assert set(ours) == set(ref) == set(w)
    for k in ours:
        assert_same(ours[k], ref[k], k)
