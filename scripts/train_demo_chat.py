"""Train the demo chat fixture: a tiny Qwen3.5 that calls ``gpu_eval`` and quotes the result.

    .venv/bin/python -m scripts.train_demo_chat --init qwengpu_mlx/chat/demo --minutes 30   # first chunk
    .venv/bin/python -m scripts.train_demo_chat --resume scripts/demo_checkpoint --minutes 30  # each next one

Training runs in chunks of at most 30 minutes. Each chunk ends by writing the checkpoint
(``--checkpoint``, default ``scripts/demo_checkpoint/``: weights, the optimizer's moments and
step, the tokenizer, the model config, ``state.json`` with the training config, the tools and
a log of the chunks) and the fixture ``qwengpu_mlx/chat/demo/`` (config.json in Qwen3.5's HF
form, model.safetensors, tokenizer files, tools.json, README.md), so every committed chunk is
a usable demo; ``--resume`` continues where it stopped. The batches are drawn from the seed
and the step alone and the learning rate is a function of the step, so the step is the
whole data position. ``--init DIR`` starts by fine-tuning a fixture (its tokenizer and
weights); without it and ``--resume`` a tokenizer is trained and the model starts at random.

Data: ``qwengpu_mlx/chat/demo_data.py`` (seeded); loss on assistant tokens only; after each
chunk, greedy exact-match rates of the tool call's expression and of the final answer on
held-out questions (a seed the training never used), and ``eval chat --model demo`` on the
shipped questions and on ``demo/unseen_questions.json``.

Training runs mlx-lm's own ``qwen3_5`` model, except that its Gated DeltaNet recurrence
(a Python loop over time steps on CPU, slow to differentiate) is swapped for an exactly
equivalent chunked form (:func:`chunked_gated_delta`, checked against mlx-lm's at start).
The fixture is plain mlx-lm: inference uses mlx-lm's recurrence unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np
from mlx.utils import tree_flatten, tree_unflatten
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
    total_steps: int = 5000  # the learning-rate schedule's length, over all chunks
    minutes: float = 30.0  # one chunk's wall clock, setup and evaluation included
    lr: float = 3e-3
    warmup: int = 30
    max_len: int = 1024
    chunk: int = 16
    eval_questions: int = 100
    # Warm restarts after the first schedule: from ``restart_step`` on, cycles of ``cycle_steps``
    # (a short warmup to ``restart_lr``, cosine to 5%); a chunk ends at a cycle's end, so each
    # evaluated model is one at the bottom of its schedule. 0: the single schedule above.
    restart_step: int = 0
    restart_lr: float = 6e-4
    cycle_steps: int = 600
    cycle_warmup: int = 20
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

def encode_conversation(tok, messages: list[dict], tools: list[dict]) -> tuple[list[int], list[int]]:
    """Token ids and a loss mask that is 1 on the assistant's own tokens (its ``<|im_end|>`` included).

    Each assistant message's tokens are what the template adds for it after the prompt that
    ``add_generation_prompt`` ends with: the same split as generation sees."""
    ids, mask, done = [], [], ""
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        prompt = tok.apply_chat_template(messages[:i], tools=tools, add_generation_prompt=True,
                                         tokenize=False)
        upto = tok.apply_chat_template(messages[:i + 1], tools=tools, tokenize=False)
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


def dataset(tok, convs, max_len: int, tools: list[dict]):
    """Encoded conversations (longer than ``max_len`` dropped), and a check of the split tokenization."""
    out = []
    for i, conv in enumerate(convs):
        ids, mask = encode_conversation(tok, conv, tools)
        if i < 200:  # the pieces must tokenize as the whole rendering does
            whole = tok.apply_chat_template(conv, tools=tools, tokenize=False)[:-1]
            assert tok.encode(whole, add_special_tokens=False) == ids, "split tokenization differs"
        if len(ids) <= max_len:
            out.append((ids, mask))
    return out


def cached_dataset(tok, c: TrainConfig, tools: list[dict], tok_dir: Path):
    """:func:`dataset` of the config's conversations, kept in the temporary directory between
    chunks: encoding 16,000 conversations takes minutes of a busy CPU's chunk. The key is all
    that decides them (the generator's source, the tokenizer, the tools, seed, count, length)."""
    parts = [Path(demo_data.__file__).read_bytes(), (tok_dir / "tokenizer.json").read_bytes(),
             json.dumps([tools, c.seed, c.conversations, c.max_len]).encode()]
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"qwengpu-demo-data-{key}.npz"
    if path.is_file():
        z = np.load(path)
        cuts = np.cumsum(z["lengths"])[:-1]
        return [(i.tolist(), m.tolist()) for i, m in zip(np.split(z["ids"], cuts), np.split(z["mask"], cuts))]
    data = dataset(tok, demo_data.conversations(c.conversations, c.seed), c.max_len, tools)
    np.savez(path, ids=np.concatenate([np.array(d[0], np.int32) for d in data]),
             mask=np.concatenate([np.array(d[1], np.int8) for d in data]),
             lengths=np.array([len(d[0]) for d in data]))
    return data


def shared_prefix(tok, tools: list[dict]) -> list[int]:
    """The tokens every conversation starts with: the system block up to its call example's end."""
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tools=tools, tokenize=False)
    end = text.index("</tool_call>") + len("</tool_call>")
    return tok.encode(text[:end], add_special_tokens=False)


def length_order(data) -> list[int]:
    """Conversation indices by length: neighbours make batches with little padding."""
    return sorted(range(len(data)), key=lambda i: len(data[i][0]))


def batch_at(data, order: list[int], batch: int, seed: int, step: int, P: int):
    """Step ``step``'s batch: ``batch`` neighbours in ``order`` at an offset drawn from (seed, step)
    alone, so a resumed run draws exactly the batches the uninterrupted one would have; right-padded
    after the shared prefix (``P`` tokens)."""
    r = random.Random(seed * 1_000_003 + step)
    j = r.randrange(len(order) - batch + 1)
    g = order[j:j + batch]
    L = max(len(data[i][0]) for i in g) - P
    x = np.zeros((batch, L), np.int32)
    m = np.zeros((batch, L), np.float32)
    for row, i in enumerate(g):
        ids, mask = data[i]
        x[row, :len(ids) - P], m[row, :len(ids) - P] = ids[P:], mask[P:]
    return mx.array(x[:, :-1]), mx.array(x[:, 1:]), mx.array(m[:, 1:])


# ---------------------------------------------------------------- train and evaluate

def render_texts(convs, tools: list[dict]) -> list[str]:
    """Conversations rendered by the template (Jinja2 directly) for the BPE trainer."""
    import jinja2

    env = jinja2.Environment()
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False)
    t = env.from_string(demo.CHAT_TEMPLATE)
    return [t.render(messages=c, tools=tools, add_generation_prompt=False) for c in convs]


def write_tokenizer(c: TrainConfig, out: Path, convs, tools: list[dict]) -> None:
    tok = demo.build_tokenizer(render_texts(convs[:4000], tools), c.vocab_size)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(demo.tokenizer_config(), indent=2) + "\n")


def cycle_position(c: TrainConfig, step: int) -> int | None:
    """Where ``step`` is in its warm-restart cycle (0 = the first step of one), None before the restarts."""
    return (step - c.restart_step - 1) % c.cycle_steps if c.restart_step and step > c.restart_step else None


def learning_rate(c: TrainConfig, step: int) -> float:
    """Linear warmup over ``warmup`` steps, then cosine decay to 5% at ``total_steps``; after
    ``restart_step``, warm-restart cycles (:func:`cycle_position`). A function of the step alone,
    so chunks continue one schedule."""
    if (i := cycle_position(c, step)) is not None:
        if i < c.cycle_warmup:
            return c.restart_lr * (i + 1) / c.cycle_warmup
        frac = (i - c.cycle_warmup) / max(1, c.cycle_steps - c.cycle_warmup - 1)
        return c.restart_lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))
    if step <= c.warmup:
        return c.lr * step / c.warmup
    frac = min((step - c.warmup) / max(1, c.total_steps - c.warmup), 1.0)
    return c.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))


def train_chunk(c: TrainConfig, model, opt, data, prefix: list[int], first: int, deadline: float) -> tuple[int, float]:
    """AdamW steps ``first``, ``first + 1``, ... on the masked loss until ``total_steps`` (before
    warm restarts), the end of a warm-restart cycle or the wall-clock ``deadline``; returns (the last step taken, the mean
    loss of its last 50 steps)."""
    P = mx.array(prefix)

    def loss_fn(model, x, y, m):
        ce = nn.losses.cross_entropy(prefix_logits(model, P, x), y)
        return (ce * m).sum() / m.sum()

    grad = nn.value_and_grad(model, loss_fn)
    order = length_order(data)
    t0, acc, recent, s = time.time(), [], [], first - 1
    while (c.restart_step or s < c.total_steps) and time.time() < deadline:
        s += 1
        opt.learning_rate = learning_rate(c, s)
        loss, g = grad(model, *batch_at(data, order, c.batch, c.seed, s, len(prefix)))
        g, _ = optim.clip_grad_norm(g, 1.0)
        opt.update(model, g)
        mx.eval(model.parameters(), opt.state, loss)
        acc.append(loss.item())
        recent = (recent + [acc[-1]])[-50:]
        if s % 10 == 0 or s == first:
            print(f"step {s:5d}  loss {np.mean(acc):.4f}  lr {opt.learning_rate.item():.2e}  "
                  f"{time.time() - t0:6.0f}s", flush=True)
            acc = []
        if cycle_position(c, s) == c.cycle_steps - 1:
            break
    return s, float(np.mean(recent)) if recent else float("nan")


def ask(model, tok, messages: list[dict], stop: str | None = "</tool_call>", max_tokens: int = 120) -> str:
    return demo.greedy_reply(model, tok, messages, stop, max_tokens)


def parse_call(tok, text: str, tools: list[dict]):
    """The call's expression through mlx-lm's parser for this template, or None."""
    if tok.tool_call_start not in text or tok.tool_call_end not in text:
        return None
    inner = text.split(tok.tool_call_start, 1)[1].split(tok.tool_call_end, 1)[0]
    try:
        call = tok.tool_parser(inner.strip(), tools)
    except Exception:
        return None
    return call.get("arguments", {}).get("expression") if call.get("name") == "gpu_eval" else None


def answer_ok(q: demo_data.Question, text: str) -> bool:
    """The final answer states the oracle's value (or, for a refusal, says it could not)."""
    if q.error:
        return "could not" in text and q.error in text
    return text.strip().endswith(demo_data.result_text(q.value) + ".")


def evaluate(model, tok, c: TrainConfig, tools: list[dict]) -> dict:
    """Greedy held-out exact-match rates: the call's expression, and the answer given the oracle's response."""
    model.eval()
    qs = demo_data.questions(c.eval_questions, c.held_out_seed)
    rng = random.Random(c.held_out_seed)
    calls = answers = 0
    for q in qs:
        msgs = ([{"role": "system", "content": rng.choice(demo_data.SYSTEM_PROMPTS)}] if rng.random() < 0.5 else [])
        msgs.append({"role": "user", "content": q.text})
        expr = parse_call(tok, ask(model, tok, msgs), tools)
        calls += expr == q.expression
        msgs += [demo_data.tool_call_message(q.expression), {"role": "tool", "content": q.response}]
        text = ask(model, tok, msgs, stop=None)
        answers += answer_ok(q, text)
        if expr != q.expression or not answer_ok(q, text):
            print(f"  miss: {q.text!r} -> {expr!r} / {text!r}")
    return {"tool_call_exact": round(calls / len(qs), 3), "answer_exact": round(answers / len(qs), 3),
            "questions": len(qs)}


def chat_score(questions: Path | None) -> dict | None:
    """``eval chat --model demo`` on a question set (the shipped one when None), in a child process
    without ``LD_PRELOAD``: the launches run through the model as users run them, unshimmed."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    cmd = [sys.executable, "-m", "qwengpu_mlx.cli.main", "eval", "chat", "--model", "demo", "--json"]
    cmd += ["--questions", str(questions)] if questions else []
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        print(f"eval chat failed: {done.stderr[-2000:]}", flush=True)
        return None
    report = json.loads(done.stdout)
    for r in report["results"]:
        print(f"  {'right' if r['right'] else 'wrong'}: {r['question']!r} -> "
              f"{[x['expression'] for x in r['calls']]}", flush=True)
    return {k: report[k] for k in ("questions", "right", "launched", "exact", "quoted", "misquoted")}


# ---------------------------------------------------------------- checkpoint and fixture

README = """# Demo chat fixture (a toy, not Qwen)

A tiny Qwen3.5-architecture model (hidden {hidden}, {layers} layers: Gated DeltaNet with one
key/value head of 128 and full attention every 4th layer, MLP {intermediate}, vocabulary
{vocab}, tied embeddings, float32, {params:,} parameters) trained on the templated
conversations of `qwengpu_mlx/chat/demo_data.py`: a user asks for a computation in one of
many phrasings, the assistant calls `gpu_eval` in Qwen3.5's XML tool-call format, the tool
answers (training data: a Python oracle's value or an `error: ...`), the assistant states
the number. It knows nothing else. It exists so the chat loop and the splice can be
tested end to end without Qwen's weights; `qwengpu_mlx.chat.demo.demo_base()` widens it
exactly (same logits) to hidden 1024 so the QWEN35_2B circuit fits beside it.

Files: `config.json` (Qwen3.5's HF form), `model.safetensors` (mlx-lm names),
`tokenizer.json` (byte-level BPE, digits single tokens), `tokenizer_config.json` (a
Qwen3.5-style ChatML template: tools in `<tools>`, calls as `<tool_call>\\n<function=...>`,
so mlx-lm picks its `qwen3_coder` parser; eos `<|im_end|>`), `tools.json` (the `gpu_eval`
description it was trained with, offered to it by the chat: a toy this small writes the
right call only after the prompt it learned), `unseen_questions.json` (questions phrased
unlike both the training templates and the shipped set: the "unseen" score).

Trained by `scripts/train_demo_chat.py` (MLX on CPU, seed {seed}, batch {batch}, AdamW
{schedule}, loss on assistant tokens only), {origin}, in
resumable chunks of at most 30 minutes: `--resume {checkpoint}` continues from the
committed checkpoint (weights, optimizer state, step; the batches are drawn from the seed
and the step, so the step is the data position; the config and the tools are in
`state.json`). Steps so far: {steps}, {train_minutes:.1f} min of training.

| chunk | steps | minutes | loss (last 50) | held-out calls / answers | shipped (24) | unseen |
|---|---|---|---|---|---|---|
{chunk_rows}
{chunk_notes}
Held-out: {questions} generated questions from a seed the training never used (greedy;
exact call expression, exact final answer; drawn from the generator of the chunk's time, so
chunks with another data mix were scored on other questions). Shipped: `qwengpu-mlx eval chat --model demo`
on `qwengpu_mlx/chat/data/questions.json` (right: the GPU computed the expected value and
the answer states it). Unseen: the same on `unseen_questions.json`. No question of either
set was copied into the training templates, but the generator composes its phrasings from
parts (frames, wordings of each operation, operand forms): with numbers and lists
abstracted, {shipped_seen} of the 24 shipped questions are phrasings that 60,000 generated questions
contain, and none of the unseen set's (`tests/chat/test_demo_answers.py` checks the
latter). So the shipped score is partly in-distribution; the unseen score is the one on
phrasings the toy has not seen.

Training config: {config}

The runs that wrote these weights forwarded MLX's CPU matrix products to numpy's OpenBLAS
(an `LD_PRELOAD` shim around `cblas_sgemm`, not part of the package) for speed: about 30x
faster matrix products on this CPU. It changes only rounding, so a rerun without it trains
a similar, not bit-identical, model. Tests and the chat never use it.
"""

TOOLS_WHY = ("The tools the demo model was trained with (scripts/train_demo_chat.py, recorded in its checkpoint's "
             "state.json): its prompt must be what it learned; a real Qwen3.5 is offered chat/tools.py's.")


def save_weights(model, path: Path) -> None:
    mx.save_safetensors(str(path), dict(tree_flatten(model.parameters())), metadata={"format": "mlx"})


def save_checkpoint(ckpt: Path, model, opt, state: dict, tok_dir: Path, config: dict) -> None:
    """Everything a later chunk needs: weights, the optimizer's moments and step, the tokenizer,
    the model config, and ``state.json`` (training config, tools, step, chunk log)."""
    ckpt.mkdir(parents=True, exist_ok=True)
    save_weights(model, ckpt / "model.safetensors")
    moments = {k: v.astype(mx.bfloat16) if v.ndim else v for k, v in tree_flatten(opt.state)}
    mx.save_safetensors(str(ckpt / "optimizer.safetensors"), moments)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if (tok_dir / name).resolve() != (ckpt / name).resolve():
            shutil.copyfile(tok_dir / name, ckpt / name)
    (ckpt / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (ckpt / "state.json").write_text(json.dumps(state, indent=1) + "\n")


def load_optimizer(ckpt: Path, c: TrainConfig):
    """AdamW, with the checkpoint's moments and step when there is one. The moments are kept
    in bfloat16 (half the committed bytes; float32's range, so no second moment underflows):
    a resumed run continues the same trajectory to that rounding."""
    opt = optim.AdamW(learning_rate=c.lr, weight_decay=0.01)
    if (ckpt / "optimizer.safetensors").exists():
        saved = mx.load(str(ckpt / "optimizer.safetensors"))
        opt.state = tree_unflatten([(k, v.astype(mx.float32) if v.ndim else v) for k, v in saved.items()])
    return opt


def write_fixture(out: Path, ckpt: Path, tools: list[dict]) -> None:
    """The demo's files from the checkpoint: a committed chunk is a usable demo."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(ckpt / name, out / name)
    (out / demo.TOOLS_FILE).write_text(json.dumps({"why": TOOLS_WHY, "normal": tools}, indent=2) + "\n")


def chunk_row(i: int, ch: dict) -> str:
    def score(s):
        return f"{s['right']}/{s['questions']}" if s else "-"

    held = ch.get("held_out") or {}
    return (f"| {i + 1} | {ch['steps'][0]}-{ch['steps'][1]} | {ch['minutes']:.1f} | {ch['loss']:.4f} | "
            f"{held.get('tool_call_exact', 0):.0%} / {held.get('answer_exact', 0):.0%} | "
            f"{score(ch.get('shipped'))} | {score(ch.get('unseen'))} |")


# Shipped questions whose phrasing (numbers and lists abstracted) the generator writes: 16 before
# the wordings added with the warm restarts (running totals, first maximum, "Which is ...?", ...),
# 18 before chunk 9's ("add the vectors ...", "reverse the list ...", "the running totals (prefix sums) of").
SHIPPED_SEEN = 20
FIRST_SCHEDULE_END = 2791  # chunks 1-4 ran the single schedule; warm restarts since


def schedule_text(c: TrainConfig) -> str:
    text = f"lr {c.lr} cosine over {c.total_steps} steps"
    if c.restart_step:
        text += (f" to step {FIRST_SCHEDULE_END}, then warm restarts (each series in the chunk notes; the latest from step "
                 f"{c.restart_step}: every {c.cycle_steps} steps, peak {c.restart_lr}, cosine to 5%)")
    return text


def write_readme(out: Path, state: dict, c: TrainConfig, vocab: int, params: int, ckpt: Path) -> None:
    chunks = state["chunks"]
    held = (chunks[-1].get("held_out") if chunks else None) or {"questions": c.eval_questions}
    (out / "README.md").write_text(README.format(
        **asdict(c), vocab=vocab, params=params, steps=state["step"], train_minutes=state["minutes"],
        origin=state["origin"], checkpoint=_shown(ckpt), questions=held["questions"], schedule=schedule_text(c),
        shipped_seen=SHIPPED_SEEN,
        chunk_rows="\n".join(chunk_row(i, ch) for i, ch in enumerate(chunks)), config=json.dumps(asdict(c)),
        chunk_notes="".join(f"\nChunk {i + 1}: {ch['note']}\n" for i, ch in enumerate(chunks) if ch.get("note"))))


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------- one chunk

MAX_CHUNK_MINUTES = 30.0
RESERVE_S = 480  # of a chunk's minutes: saving and the evaluations after the last step
CHECKPOINT = Path(__file__).with_name("demo_checkpoint")


def start_state(args, c: TrainConfig, out: Path, tools: list[dict]) -> tuple[dict, Path, dict]:
    """A new run: (state, the directory holding its tokenizer and initial weights or None, model config).

    ``--init DIR`` fine-tunes a fixture (its tokenizer and weights); without it a tokenizer is
    trained on the conversations and the model starts from a random initialization."""
    if args.init:
        config = json.loads((args.init / "config.json").read_text())
        state = {"origin": f"fine-tuned from the fixture in {_shown(args.init)}", "step": 0, "minutes": 0.0,
                 "chunks": [], "tools": tools}
        return state, args.init, config
    convs = demo_data.conversations(min(c.conversations, 4000), c.seed)
    write_tokenizer(c, args.checkpoint, convs, tools)
    from mlx_lm.tokenizer_utils import load as load_tokenizer

    vocab = len(load_tokenizer(args.checkpoint).vocab)
    state = {"origin": "from a random initialization", "step": 0, "minutes": 0.0, "chunks": [], "tools": tools}
    return state, args.checkpoint, full_config(text_config(c, vocab))


def open_run(args) -> tuple[TrainConfig, dict, Path, dict]:
    """(config, state, the directory to read weights and tokenizer from, model config), new or resumed."""
    if args.resume:
        state = json.loads((args.resume / "state.json").read_text())
        c = TrainConfig(**{**state["config"], "minutes": args.minutes,
                           "total_steps": args.total_steps or state["config"]["total_steps"]})
        if args.restart_lr:  # a new series of warm restarts from the checkpoint's step
            c.restart_step, c.restart_lr, c.cycle_steps = state["step"], args.restart_lr, args.cycle_steps
        if args.retool:  # the toy learns today's description from here on; the checkpoint records it
            state["tools"] = TOOLS["normal"]
        return c, state, args.resume, json.loads((args.resume / "config.json").read_text())
    c = TrainConfig(minutes=args.minutes, conversations=args.conversations, eval_questions=args.eval_questions,
                    total_steps=args.total_steps or TrainConfig.total_steps, lr=args.lr)
    state, src, config = start_state(args, c, args.out, TOOLS["normal"])
    return c, state, src, config


def build_model(config: dict, src: Path):
    model = qwen3_5.Model(qwen3_5.ModelArgs.from_dict(config))
    if (src / "model.safetensors").exists():
        model.load_weights(str(src / "model.safetensors"))
    mx.eval(model.parameters())
    return model


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=demo.DEMO_DIR, help="the fixture directory written after each chunk")
    ap.add_argument("--checkpoint", type=Path, default=CHECKPOINT, help="where this chunk writes its checkpoint")
    ap.add_argument("--resume", type=Path, help="continue from this checkpoint (its config, tools and step)")
    ap.add_argument("--init", type=Path, help="start by fine-tuning this fixture (its tokenizer and weights)")
    ap.add_argument("--minutes", type=float, default=MAX_CHUNK_MINUTES, help="this chunk's wall clock (<= 30)")
    ap.add_argument("--total-steps", type=int, help="the schedule's length (kept from the checkpoint if omitted)")
    ap.add_argument("--lr", type=float, default=TrainConfig.lr)
    ap.add_argument("--conversations", type=int, default=TrainConfig.conversations)
    ap.add_argument("--eval-questions", type=int, default=TrainConfig.eval_questions)
    ap.add_argument("--restart-lr", type=float,
                    help="with --resume: warm-restart cycles from the checkpoint's step at this peak rate "
                         "(a new series: the schedule's earlier steps are in the chunk log)")
    ap.add_argument("--cycle-steps", type=int, default=TrainConfig.cycle_steps, help="a warm-restart cycle's steps")
    ap.add_argument("--retool", action="store_true",
                    help="with --resume: offer today's gpu_eval description (chat/tools.py) from this chunk on")
    ap.add_argument("--note", default="", help="what changed for this chunk (kept in its log entry)")
    ap.add_argument("--no-chat-eval", action="store_true", help="skip eval chat on the shipped and unseen sets")
    args = ap.parse_args()
    if not 0 < args.minutes <= MAX_CHUNK_MINUTES:
        ap.error(f"--minutes must be in (0, {MAX_CHUNK_MINUTES:g}]: a chunk is at most 30 minutes")
    return args


def main() -> None:
    t_start = time.time()
    args = parse_args()
    c, state, src, config = open_run(args)
    deadline = t_start + 60 * c.minutes - RESERVE_S
    mx.random.seed(c.seed)
    err = check_chunked(c.chunk)
    print(f"chunked Gated DeltaNet vs mlx-lm's loop: max abs diff {err:.2e}")
    assert err < 1e-4
    tools = state["tools"]
    from mlx_lm.tokenizer_utils import load as load_tokenizer

    tok = load_tokenizer(src)
    assert tok.has_tool_calling and tok.tool_parser is not None
    data = cached_dataset(tok, c, tools, src)
    lens = [len(d[0]) for d in data]
    print(f"{len(data)} conversations, tokens per conversation: mean {np.mean(lens):.0f}, max {max(lens)}; "
          f"vocab {len(tok.vocab)}  ({time.time() - t_start:.0f}s)", flush=True)
    model = build_model(config, src)
    nparams = sum(v.size for _, v in tree_flatten(model.parameters()))
    opt = load_optimizer(src, c)
    prefix = shared_prefix(tok, tools)
    assert all(d[0][:len(prefix)] == prefix for d in data), "a conversation does not start with the tools block"
    original = qwen3_5.gated_delta_update
    qwen3_5.gated_delta_update = training_update(c.chunk)
    model.train()
    err = check_prefix(model, prefix, data)
    print(f"model: {nparams:,} parameters; shared prefix: {len(prefix)} tokens; prefix-shared vs whole logits: "
          f"max abs diff {err:.2e}; from step {state['step'] + 1}", flush=True)
    assert err < 1e-4
    t0, first = time.time(), state["step"] + 1
    try:
        last, loss = train_chunk(c, model, opt, data, prefix, first, deadline)
    finally:
        qwen3_5.gated_delta_update = original
    minutes = (time.time() - t0) / 60
    chunk = {"steps": [first, last], "minutes": round(minutes, 2), "loss": round(loss, 4)}
    if args.note:
        chunk["note"] = args.note
    state.update(config=asdict(c), step=last, minutes=round(state["minutes"] + minutes, 2),
                 chunks=state["chunks"] + [chunk])
    save_checkpoint(args.checkpoint, model, opt, state, src, config)
    write_fixture(args.out, args.checkpoint, tools)
    write_readme(args.out, state, c, len(tok.vocab), nparams, args.checkpoint)
    print(f"checkpoint: {args.checkpoint} (step {last}); fixture: {args.out}", flush=True)

    import mlx_lm

    model, tok = mlx_lm.load(str(args.out))
    chunk["held_out"] = evaluate(model, tok, c, tools)
    print(f"held-out: {json.dumps(chunk['held_out'])}  (training {minutes:.1f} min)", flush=True)
    if not args.no_chat_eval and args.out.resolve() == demo.DEMO_DIR.resolve():
        chunk["shipped"] = chat_score(None)
        unseen = demo.DEMO_DIR / "unseen_questions.json"
        chunk["unseen"] = chat_score(unseen) if unseen.exists() else None
        print(f"eval chat: shipped {chunk['shipped']}, unseen {chunk['unseen']}", flush=True)
    (args.checkpoint / "state.json").write_text(json.dumps(state, indent=1) + "\n")
    write_readme(args.out, state, c, len(tok.vocab), nparams, args.checkpoint)


if __name__ == "__main__":
    main()
