"""Chat start-up against mlx-lm's own load of the same base, as a ratio.

    .venv/bin/python -m bench.chat_startup --work DIR [--layers 4] [--runs 2] [--before]

The base is random at Qwen3.5-2B's config (hidden 2048, MLP 6144, vocabulary 248,320,
bfloat16) with ``--layers`` layers, Qwen3.5's real tokenizer and its real chat template
(``tests/templates``), written once to ``DIR`` (``bench/build_real.py``'s base). Each
figure is one fresh process, timed from its first line (imports included), so the file
cache is the only thing runs share:

* ``mlx_lm``: ``mlx_lm.load(base)``, what ``mlx_lm.chat`` does before its first prompt;
* ``chat``: ``chat.models.open_chat_model(base)`` and the session, i.e. ``qwengpu-mlx chat
  --model base`` up to its first prompt, with each step over a second named; then the
  first token of a question's reply (its prefill: the question after the tools' system
  prompt, whose cache ``chat.prefix`` keeps per base), timed apart.

The circuit and prompt caches are warmed by one chat start first (its figures are printed too).
``--before`` also times, in one more process, the steps the chat's start-up no longer
takes (what it did before): the circuit folded again in every process, the SHA-256 of
every base file, and the launch rows' suppression measured on the calibration text.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MLX_LM = """
import time; t0 = time.perf_counter()
import sys, json, mlx_lm
mlx_lm.load(sys.argv[1])
print(json.dumps({"ready": time.perf_counter() - t0}))
"""

CHAT = """
import time; t0 = time.perf_counter()
import sys, json
from qwengpu_mlx.chat.models import open_chat_model
from qwengpu_mlx.chat.session import ChatSession, ChatSettings
from qwengpu_mlx.runtime import CircuitStore
model = open_chat_model(sys.argv[1], CircuitStore(), log=lambda s: print(s, file=sys.stderr, flush=True))
session = ChatSession(model, ChatSettings(max_tokens=1))
ready = time.perf_counter() - t0
for event in session.turn("What is [1, 2, 3] @ [4, 5, 6]?"):
    break
first = time.perf_counter() - t0 - ready
try:
    from qwengpu_mlx.chat.startup import STEPS
except ImportError:  # an older checkout
    STEPS = []
print(json.dumps({"ready": ready, "first_token": first, "steps": STEPS}))
"""


BEFORE = """
import time, sys, json
from pathlib import Path
from qwengpu_mlx.compiler.sizing import QWEN35_2B
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from qwengpu_mlx.runtime import CircuitStore
from qwengpu_mlx.splice.build import load_base
from qwengpu_mlx.splice.logits import suppression_row
from qwengpu_mlx.splice.pipeline import calibration_text
from qwengpu_mlx.splice.source import acquire
out = {}
t = time.perf_counter(); acquire(sys.argv[1]); out["hashes"] = time.perf_counter() - t
t = time.perf_counter(); compiled = CircuitStore().compiled(PUBLISHED_MACHINE, QWEN35_2B); compiled.compact()
out["fold"] = time.perf_counter() - t
model, tok = load_base(Path(sys.argv[1]))
ids = tok.encode(calibration_text())
t = time.perf_counter()
try:
    suppression_row(model, ids, len(compiled.plan.vocab))
except Exception as e:  # a random base may have no common direction: the time is what counts
    print(f"suppression: {e}", file=sys.stderr)
out["suppression"] = time.perf_counter() - t
out["calibration_tokens"] = len(ids)
print(json.dumps(out))
"""


def write_base(d: Path, layers: int) -> Path:
    from bench.build_real import REAL
    from bench.build_real import write_base as write_random_base

    cfg = dict(REAL["2b"], num_hidden_layers=layers)
    cfg.pop("layer_types", None)
    write_random_base(d, cfg)
    (d / "chat_template.jinja").write_text((ROOT / "tests" / "templates" / "qwen3_5_35b_a3b.jinja").read_text())
    return d


def timed_process(script: str, base: Path) -> dict:
    r = subprocess.run([sys.executable, "-c", script, str(base)], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"failed: {r.stderr[-2000:]}")
    for line in r.stderr.splitlines():
        print(f"    | {line}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="where the base goes (kept for reruns)")
    ap.add_argument("--layers", type=int, default=4, help="base layers (a multiple of 4)")
    ap.add_argument("--runs", type=int, default=2, help="runs of each, the fastest reported")
    ap.add_argument("--before", action="store_true", help="also time the steps start-up no longer takes")
    ns = ap.parse_args()
    base = write_base(ns.work / f"base-2b-{ns.layers}", ns.layers)
    print(f"base: {base} (Qwen3.5-2B widths, {ns.layers} layers, bfloat16)")
    cold = timed_process(CHAT, base)
    print(f"chat, first start (caches as they were): {cold['ready']:.1f} s to the first prompt, "
          f"{cold['first_token']:.1f} s more to the first token")
    lm = min((timed_process(MLX_LM, base) for _ in range(ns.runs)), key=lambda r: r["ready"])
    chat = min((timed_process(CHAT, base) for _ in range(ns.runs)), key=lambda r: r["ready"])
    for what, seconds in chat["steps"]:
        print(f"  {what}: {seconds:.2f} s")
    print(f"mlx_lm.load: {lm['ready']:.1f} s; chat to its first prompt: {chat['ready']:.1f} s "
          f"(ratio {chat['ready'] / lm['ready']:.2f}); first token of the first reply: {chat['first_token']:.1f} s")
    if ns.before:
        old = timed_process(BEFORE, base)
        before = chat["ready"] + old["hashes"] + old["fold"] + old["suppression"]
        print(f"before: + hashes {old['hashes']:.1f} s + the fold {old['fold']:.1f} s + the suppression on "
              f"{old['calibration_tokens']:,} calibration tokens {old['suppression']:.1f} s = {before:.0f} s to the "
              f"first prompt (ratio {before / lm['ready']:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
