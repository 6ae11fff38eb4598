"""Train the demo chat fixture: a tiny Qwen3.5 that calls ``gpu_eval`` and quotes the result.

    .venv/bin/python -m scripts.train_demo_chat [--steps N] [--out DIR]

Writes ``qwengpu_mlx/chat/demo/`` (config.json in Qwen3.5's HF form, model.safetensors,
tokenizer.json, tokenizer_config.json with the chat template, README.md). Data:
``qwengpu_mlx/chat/demo_data.py`` (seeded); loss on assistant tokens only; at the end,
greedy exact-match rates of the tool call's expression and of the final answer on
held-out questions (a seed the training never used).

Training runs mlx-lm's own ``qwen3_5`` model, except that its Gated DeltaNet recurrence
(a Python loop over time steps on CPU, slow to differentiate) is swapped for an exactly
equivalent chunked form (:func:`chunked_gated_delta`, checked against mlx-lm's at start).
The fixture is plain mlx-lm: inference uses mlx-lm's recurrence unchanged.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np
from mlx.utils import tree_flatten
from mlx_lm.models import gated_delta, qwen3_5

from qwengpu_mlx.chat import demo, demo_data
from qwengpu_mlx.chat.tools import TOOLS


@dataclass
class TrainConfig:
    """Everything that decides the fixture (the seed included)."""

    seed: int = 0
    held_out_seed: int = 10_001
    conversations: int = 16_000
    vocab_size: int = 640
    hidden: int = 64
    layers: int = 4
    intermediate: int = 256
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 32
    batch: int = 12
    steps: int = 100_000
    minutes: float = 20.0  # training wall-clock budget
    lr: float = 3e-3
    warmup: int = 30
    max_len: int = 512
    chunk: int = 16
    eval_questions: int = 100
    # 2^-16: exact in binary and decimal (rms_norm_eps of the tiny model; widening keeps it).
    rms_norm_eps: float = 2.0 ** -16


def text_config(c: TrainConfig, vocab: int) -> dict:
    """Qwen3.5's text config at the toy's sizes (key/value head dims 128, as the splice needs)."""
    return {
        "model_type": "qwen3_5_text", "hidden_size": c.hidden, "intermediate_size": c.intermediate,
        "num_hidden_layers": c.layers, "num_attention_heads": c.heads, "num_key_value_heads": c.kv_heads,
        "head_dim": c.head_dim, "rms_norm_eps": c.rms_norm_eps, "vocab_size": vocab,
        "max_position_embeddings": 4096, "linear_num_key_heads": 1, "linear_num_value_heads": 1,
        "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
        "full_attention_interval": 4, "tie_word_embeddings": True, "attn_output_gate": True,
        "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(c.layers)],
        "rope_parameters": {"rope_type": "default", "rope_theta": 10_000_000.0, "partial_rotary_factor": 0.25,
                            "mrope_section": [11, 11, 10]},
    }


def full_config(text: dict) -> dict:
    """config.json in Qwen3.5's HF form (what mlx-lm and the splice read)."""
    return {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
            "text_config": text, "tie_word_embeddings": True, "torch_dtype": "float32",
            "eos_token_id": None, "demo": "toy trained on templated arithmetic conversations, not Qwen"}


# ---------------------------------------------------------------- chunked Gated DeltaNet (training only)

def chunked_gated_delta(q, k, v, log_g, beta, chunk: int, state=None):
    """The gated delta rule over chunks: ``S_t = g_t S (I - b_t k_t k_t^T) + b_t v_t k_t^T``, ``o_t = S_t q_t``.

    Within a chunk the deltas solve a unit lower-triangular system (the WY form); its
    inverse is a product of ``log2(chunk)`` matrix squares (the strict part is nilpotent),
    so the graph has ``T / chunk`` sequential steps instead of ``T``. Shapes as mlx-lm's
    (q, k: [B, T, H, Dk]; v: [B, T, H, Dv]; log_g, beta: [B, T, H]; state [B, H, Dv, Dk] or None);
    returns (y [B, T, H, Dv], the final state). Padded steps (k = 0, g = 1) change nothing."""
    B, T, H, Dk = q.shape
    Dv = v.shape[-1]
    pad = (-T) % chunk
    if pad:
        q, k, v = (mx.pad(x, [(0, 0), (0, pad), (0, 0), (0, 0)]) for x in (q, k, v))
        log_g, beta = (mx.pad(x, [(0, 0), (0, pad), (0, 0)]) for x in (log_g, beta))
    N = (T + pad) // chunk

    def split(x):  # [B, T, H, ...] -> [B, H, N, C, ...]
        x = x.reshape(B, N, chunk, H, *x.shape[3:])
        return x.transpose(0, 3, 1, 2, *range(4, x.ndim))

    q, k, v, log_g, beta = (split(x.astype(mx.float32)) for x in (q, k, v, log_g, beta))
    cum = mx.cumsum(log_g, axis=-1)  # [B, H, N, C]
    i = mx.arange(chunk)
    incl, strict = i[:, None] >= i[None, :], i[:, None] > i[None, :]
    gam = mx.exp(mx.where(incl, cum[..., :, None] - cum[..., None, :], -mx.inf))  # gamma_i / gamma_j, i >= j
    kb = k * beta[..., None]
    A = mx.where(strict, (kb @ k.swapaxes(-1, -2)) * gam, 0.0)
    X = -A
    inv = mx.eye(chunk) + X
    for _ in range(int(math.log2(chunk)) - 1):
        X = X @ X
        inv = inv @ (mx.eye(chunk) + X)
    W = inv @ (kb * mx.exp(cum)[..., None])
    U = inv @ (v * beta[..., None])
    qk = mx.where(incl, (q @ k.swapaxes(-1, -2)) * gam, 0.0)
    S = mx.zeros((B, H, Dv, Dk), mx.float32) if state is None else state.astype(mx.float32)
    outs = []
    for n in range(N):
        St = S.swapaxes(-1, -2)  # [B, H, Dk, Dv]
        u = U[:, :, n] - W[:, :, n] @ St
        outs.append((q[:, :, n] * mx.exp(cum[:, :, n])[..., None]) @ St + qk[:, :, n] @ u)
        last = cum[:, :, n, -1]
        tail = k[:, :, n] * mx.exp(last[..., None] - cum[:, :, n])[..., None]
        S = mx.exp(last)[..., None, None] * S + u.swapaxes(-1, -2) @ tail
    y = mx.stack(outs, axis=2)  # [B, H, N, C, Dv]
    y = y.transpose(0, 2, 3, 1, 4).reshape(B, N * chunk, H, Dv)
    return y[:, :T], S


def training_update(chunk: int):
    """A drop-in for mlx-lm's ``gated_delta_update`` (no mask: unpadded sequences)."""
    def update(q, k, v, a, b, A_log, dt_bias, state=None, mask=None, *, use_kernel=True, **_):
        assert mask is None, "training runs unpadded sequences"
        if (r := v.shape[-2] // q.shape[-2]) > 1:
            q, k = mx.repeat(q, r, -2), mx.repeat(k, r, -2)
        log_g = -mx.exp(A_log.astype(mx.float32)) * nn.softplus(a + dt_bias)
        y, state = chunked_gated_delta(q, k, v, log_g, mx.sigmoid(b), chunk, state)
        return y.astype(v.dtype), state
    return update


def check_chunked(chunk: int) -> float:
    """Max |chunked - mlx-lm's loop| on random inputs: the swap must not change the model."""
    mx.random.seed(1)
    B, T, H, D = 2, 37, 2, 128
    q = mx.fast.rms_norm(mx.random.normal((B, T, H, D)), None, 1e-6) / D
    k = mx.fast.rms_norm(mx.random.normal((B, T, H, D)), None, 1e-6) / math.sqrt(D)
    v = mx.random.normal((B, T, H, D))
    a, b = mx.random.normal((B, T, H)), mx.random.normal((B, T, H))
    A_log, dt_bias = mx.log(mx.random.uniform(1, 16, (H,))), mx.random.uniform(-1, 1, (H,))
    ref, _ = gated_delta.gated_delta_ops(q, k, v, gated_delta.compute_g(A_log, a, dt_bias), mx.sigmoid(b))
    ours, _ = training_update(chunk)(q, k, v, a, b, A_log, dt_bias)
    return float(mx.abs(ref - ours).max())


def prefix_logits(model, prefix: mx.array, x: mx.array) -> mx.array:
    """Logits of each row of ``x`` continuing the shared ``prefix``, the prefix run once.

    Every conversation starts with the same tools block (~220 tokens, more than half of
    one): it runs with batch 1 into mlx-lm's cache, the cache is repeated over the
    batch, and the rows continue from it as a chunked prefill would. Gradients flow
    through the prefix (it is the same computation, shared)."""
    from mlx_lm.models.cache import KVCache

    cache = model.make_cache()
    model(prefix[None], cache=cache)
    B = x.shape[0]
    for c in cache:
        if isinstance(c, KVCache):
            c.keys = mx.repeat(c.keys[..., :c.offset, :], B, 0)
            c.values = mx.repeat(c.values[..., :c.offset, :], B, 0)
        else:
            c.cache = [mx.repeat(a, B, 0) for a in c.cache]
    return model(x, cache=cache)


def check_prefix(model, prefix: list[int], data) -> float:
    """Max |prefix-shared - whole-sequence| logits on two rows: the sharing must not change the model."""
    n = min(len(data[0][0]), len(data[1][0]))
    rows = mx.array([d[0][:n] for d in data[:2]])
    P = len(prefix)
    whole = model(rows)[:, P:]
    shared = prefix_logits(model, mx.array(prefix), rows[:, P:])
    return float(mx.abs(whole - shared).max())


# ---------------------------------------------------------------- data

def encode_conversation(tok, messages: list[dict]) -> tuple[list[int], list[int]]:
    """Token ids and a loss mask that is 1 on the assistant's own tokens (its ``<|im_end|>`` included).

    Each assistant message's tokens are what the template adds for it after the prompt that
    ``add_generation_prompt`` ends with: the same split as generation sees."""
    ids, mask, done = [], [], ""
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        prompt = tok.apply_chat_template(messages[:i], tools=TOOLS["normal"], add_generation_prompt=True,
                                         tokenize=False)
        upto = tok.apply_chat_template(messages[:i + 1], tools=TOOLS["normal"], tokenize=False)
        assert prompt.startswith(done) and upto.startswith(prompt)
        part = tok.encode(prompt[len(done):], add_special_tokens=False)
        ids += part
        mask += [0] * len(part)
        reply = upto[len(prompt):]
        assert reply.endswith("<|im_end|>\n")
        part = tok.encode(reply[:-1], add_special_tokens=False)
        ids += part
        mask += [1] * len(part)
        done = upto[:-1]
    return ids, mask


def dataset(tok, convs, max_len: int):
    """Encoded conversations (longer than ``max_len`` dropped), and a check of the split tokenization."""
    out = []
    for i, conv in enumerate(convs):
        ids, mask = encode_conversation(tok, conv)
        if i < 200:  # the pieces must tokenize as the whole rendering does
            whole = tok.apply_chat_template(conv, tools=TOOLS["normal"], tokenize=False)[:-1]
            assert tok.encode(whole, add_special_tokens=False) == ids, "split tokenization differs"
        if len(ids) <= max_len:
            out.append((ids, mask))
    return out


def shared_prefix(tok) -> list[int]:
    """The tokens every conversation starts with: the system block up to its call example's end."""
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tools=TOOLS["normal"], tokenize=False)
    end = text.index("</tool_call>") + len("</tool_call>")
    return tok.encode(text[:end], add_special_tokens=False)


def batches(data, batch: int, rng: random.Random, P: int):
    """Endless batches of similar lengths after the shared prefix (``P`` tokens), right-padded."""
    while True:
        order = sorted(rng.sample(range(len(data)), min(len(data), batch * 64)), key=lambda i: len(data[i][0]))
        groups = [order[j:j + batch] for j in range(0, len(order) - batch + 1, batch)]
        rng.shuffle(groups)
        for g in groups:
            L = max(len(data[i][0]) for i in g) - P
            x = np.zeros((batch, L), np.int32)
            m = np.zeros((batch, L), np.float32)
            for r, i in enumerate(g):
                ids, mask = data[i]
                x[r, :len(ids) - P], m[r, :len(ids) - P] = ids[P:], mask[P:]
            yield mx.array(x[:, :-1]), mx.array(x[:, 1:]), mx.array(m[:, 1:])


# ---------------------------------------------------------------- train and evaluate

def render_texts(convs) -> list[str]:
    """Conversations rendered by the template (Jinja2 directly) for the BPE trainer."""
    import jinja2

    env = jinja2.Environment()
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False)
    t = env.from_string(demo.CHAT_TEMPLATE)
    return [t.render(messages=c, tools=TOOLS["normal"], add_generation_prompt=False) for c in convs]


def write_tokenizer(c: TrainConfig, out: Path, convs) -> None:
    tok = demo.build_tokenizer(render_texts(convs[:4000]), c.vocab_size)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(demo.tokenizer_config(), indent=2) + "\n")


def learning_rate(c: TrainConfig, step: int, frac: float) -> float:
    """Linear warmup over ``warmup`` steps, then cosine decay over the run's time (to 5%)."""
    if step <= c.warmup:
        return c.lr * step / c.warmup
    return c.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0))))


def train(c: TrainConfig, model, data, prefix: list[int]) -> int:
    """AdamW on the masked loss until ``steps`` or ``minutes`` run out; returns the steps taken.

    The schedule follows the wall-clock fraction, so a slower machine takes fewer steps
    of the same schedule (the 2-core machine this was trained on is shared)."""
    opt = optim.AdamW(learning_rate=c.lr, weight_decay=0.01)

    P = mx.array(prefix)

    def loss_fn(model, x, y, m):
        ce = nn.losses.cross_entropy(prefix_logits(model, P, x), y)
        return (ce * m).sum() / m.sum()

    grad = nn.value_and_grad(model, loss_fn)
    it = batches(data, c.batch, random.Random(c.seed), len(prefix))
    t0, acc, s = time.time(), [], 0
    while s < c.steps and (time.time() - t0) < 60 * c.minutes:
        s += 1
        frac = (time.time() - t0) / (60 * c.minutes)
        opt.learning_rate = learning_rate(c, s, frac)
        loss, g = grad(model, *next(it))
        g, _ = optim.clip_grad_norm(g, 1.0)
        opt.update(model, g)
        mx.eval(model.parameters(), opt.state, loss)
        acc.append(loss.item())
        if s % 10 == 0 or s == 1:
            print(f"step {s:5d}  loss {np.mean(acc):.4f}  lr {opt.learning_rate.item():.2e}  "
                  f"{time.time() - t0:6.0f}s", flush=True)
            acc = []
    return s


def ask(model, tok, messages: list[dict], stop: str | None = "</tool_call>", max_tokens: int = 120) -> str:
    return demo.greedy_reply(model, tok, messages, stop, max_tokens)


def parse_call(tok, text: str):
    """The call's expression through mlx-lm's parser for this template, or None."""
    if tok.tool_call_start not in text or tok.tool_call_end not in text:
        return None
    inner = text.split(tok.tool_call_start, 1)[1].split(tok.tool_call_end, 1)[0]
    try:
        call = tok.tool_parser(inner.strip(), TOOLS["normal"])
    except Exception:
        return None
    return call.get("arguments", {}).get("expression") if call.get("name") == "gpu_eval" else None


def answer_ok(q: demo_data.Question, text: str) -> bool:
    """The final answer states the oracle's value (or, for a refusal, says it could not)."""
    if q.error:
        return "could not" in text and q.error in text
    return text.strip().endswith(demo_data.result_text(q.value) + ".")


def evaluate(model, tok, c: TrainConfig) -> dict:
    """Greedy held-out exact-match rates: the call's expression, and the answer given the oracle's response."""
    model.eval()
    qs = demo_data.questions(c.eval_questions, c.held_out_seed)
    rng = random.Random(c.held_out_seed)
    calls = answers = 0
    for q in qs:
        msgs = ([{"role": "system", "content": rng.choice(demo_data.SYSTEM_PROMPTS)}] if rng.random() < 0.5 else [])
        msgs.append({"role": "user", "content": q.text})
        expr = parse_call(tok, ask(model, tok, msgs))
        calls += expr == q.expression
        msgs += [demo_data.tool_call_message(q.expression), {"role": "tool", "content": q.response}]
        text = ask(model, tok, msgs, stop=None)
        answers += answer_ok(q, text)
        if expr != q.expression or not answer_ok(q, text):
            print(f"  miss: {q.text!r} -> {expr!r} / {text!r}")
    return {"tool_call_exact": calls / len(qs), "answer_exact": answers / len(qs), "questions": len(qs)}


README = """# Demo chat fixture (a toy, not Qwen)

A tiny Qwen3.5-architecture model (hidden {hidden}, {layers} layers: Gated DeltaNet with one
key/value head of 128 and full attention every 4th layer, MLP {intermediate}, vocabulary
{vocab}, tied embeddings, float32, {params:,} parameters) trained from scratch on the
templated arithmetic conversations of `qwengpu_mlx/chat/demo_data.py`: a user asks for an
integer computation, the assistant calls `gpu_eval` in Qwen3.5's XML tool-call format, the
tool answers (training data: a Python oracle's value or an `error: ...`), the assistant
states the number. It knows nothing else. It exists so the chat loop and the splice can
be tested end to end without Qwen's weights; `qwengpu_mlx.chat.demo.demo_base()` widens it
exactly (same logits) to hidden 1024 so the QWEN35_2B circuit fits beside it.

Files: `config.json` (Qwen3.5's HF form), `model.safetensors` (mlx-lm names),
`tokenizer.json` (byte-level BPE trained on the same conversations, digits single tokens),
`tokenizer_config.json` (a Qwen3.5-style ChatML template: tools in `<tools>`, calls as
`<tool_call>\\n<function=...>`, so mlx-lm picks its `qwen3_coder` parser; eos `<|im_end|>`).

Trained by `scripts/train_demo_chat.py` (MLX on CPU, seed {seed}, {steps} steps of batch
{batch}, AdamW lr {lr} cosine, loss on assistant tokens only): {train_minutes:.1f} min.
Held-out (seed {held_out_seed}, {questions} questions, greedy): tool call expression exact
{tool_call_exact:.0%}, final answer exact {answer_exact:.0%}.

Training config: {config}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=demo.DEMO_DIR)
    ap.add_argument("--steps", type=int, default=TrainConfig.steps)
    ap.add_argument("--minutes", type=float, default=TrainConfig.minutes)
    ap.add_argument("--conversations", type=int, default=TrainConfig.conversations)
    ap.add_argument("--eval-questions", type=int, default=TrainConfig.eval_questions)
    args = ap.parse_args()
    c = TrainConfig(steps=args.steps, minutes=args.minutes, conversations=args.conversations,
                    eval_questions=args.eval_questions)
    mx.random.seed(c.seed)
    err = check_chunked(c.chunk)
    print(f"chunked Gated DeltaNet vs mlx-lm's loop: max abs diff {err:.2e}")
    assert err < 1e-4
    t_start = time.time()
    convs = demo_data.conversations(c.conversations, c.seed)
    write_tokenizer(c, args.out, convs)
    from mlx_lm.tokenizer_utils import load as load_tokenizer

    tok = load_tokenizer(args.out)
    assert tok.has_tool_calling and tok.tool_parser is not None
    data = dataset(tok, convs, c.max_len)
    lens = [len(d[0]) for d in data]
    print(f"{len(data)} conversations, tokens per conversation: mean {np.mean(lens):.0f}, max {max(lens)}; "
          f"vocab {len(tok.vocab)}  ({time.time() - t_start:.0f}s)", flush=True)

    text = text_config(c, len(tok.vocab))
    config = full_config(text)
    model = qwen3_5.Model(qwen3_5.ModelArgs.from_dict(config))
    nparams = sum(v.size for _, v in tree_flatten(model.parameters()))
    print(f"model: {nparams:,} parameters", flush=True)
    original = qwen3_5.gated_delta_update
    qwen3_5.gated_delta_update = training_update(c.chunk)
    model.train()
    t0 = time.time()
    prefix = shared_prefix(tok)
    assert all(d[0][:len(prefix)] == prefix for d in data), "a conversation does not start with the tools block"
    err = check_prefix(model, prefix, data)
    print(f"shared prefix: {len(prefix)} tokens; prefix-shared vs whole logits: max abs diff {err:.2e}", flush=True)
    assert err < 1e-4
    try:
        steps = train(c, model, data, prefix)
    finally:
        qwen3_5.gated_delta_update = original
    minutes = (time.time() - t0) / 60
    weights = dict(tree_flatten(model.parameters()))
    mx.save_safetensors(str(args.out / "model.safetensors"), weights, metadata={"format": "mlx"})
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")

    import mlx_lm

    model, tok = mlx_lm.load(str(args.out))
    metrics = evaluate(model, tok, c)
    print(f"held-out: {json.dumps(metrics)}  (training {minutes:.1f} min)", flush=True)
    (args.out / "README.md").write_text(README.format(
        **{**asdict(c), "steps": steps}, vocab=len(tok.vocab), params=nparams, train_minutes=minutes, **metrics,
        config=json.dumps(asdict(c))))


if __name__ == "__main__":
    main()
