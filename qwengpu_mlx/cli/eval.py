"""``qwengpu-mlx eval``: a combined model measured: its text against its base's (drift), or
its chat answers on a question set (chat)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mlx_lm.utils import load

from qwengpu_mlx.chat.cli import open_model
from qwengpu_mlx.chat.evaluate import QuestionSetError, evaluate_chat, load_questions, report_lines
from qwengpu_mlx.chat.session import ChatSettings
from qwengpu_mlx.cli.refusals import splice_errors
from qwengpu_mlx.core.errors import LaunchError
from qwengpu_mlx.runtime import CircuitStore
from qwengpu_mlx.splice.combined_runner import open_combined
from qwengpu_mlx.splice.drift import measure, mlx_lm_logits, ours_logits
from qwengpu_mlx.splice.machine_choice import named_machine
from qwengpu_mlx.splice.pipeline import sample_text
from qwengpu_mlx.splice.source import acquire


def _eval_chat(ns) -> int:
    """``eval chat``: the question set through the real chat loop (``chat.evaluate``)."""
    try:
        questions = load_questions(Path(ns.questions) if ns.questions else None).get(ns.mode, [])
    except QuestionSetError as e:
        raise LaunchError(f"--questions {e}") from None
    if not questions:
        raise LaunchError(f"the question set has no {ns.mode!r} questions")
    model = open_model(ns.model, named_machine(ns.machine))  # none named: the default machine when its circuit fits

    def on_result(i, r):
        mark = "right" if r.right else "wrong"
        calls = "".join(f" [{c['expression']!r} -> {c['result']}]" for c in r.calls)
        flag = "".join(f" [misquoted: {m['stated']}, the GPU computed {m['true'] or 'no value'}]" for m in r.misquotes)
        print(f"[{i + 1}/{len(questions)}] {mark}: {r.question}{calls} -> {r.answer!r}{flag}", file=sys.stderr,
              flush=True)

    settings = ChatSettings(max_tokens=ns.max_tokens, thinking=ns.thinking)
    ev = evaluate_chat(model, ns.mode, questions, settings=settings, on_result=on_result)
    print(json.dumps(ev.to_json()) if ns.json else "\n".join(report_lines(ev)))
    return 0


def run(ns) -> int:
    """``eval drift``: the combined model's text against the base's (``splice.drift``)."""
    if ns.what == "chat":
        return _eval_chat(ns)
    if not ns.base:
        raise LaunchError("eval drift needs --base (the base the combined checkpoint was built from)")

    with splice_errors("eval drift"):
        combined = open_combined(ns.model, CircuitStore())
        base_dir = acquire(ns.base).path
    base, tokenizer = load(str(base_dir))
    tokens = tokenizer.encode(sample_text())[: ns.tokens]
    V = combined.layout.base_rows
    rows = [("our runner", measure(mlx_lm_logits(base, tokens), ours_logits(combined, tokens), V))]
    if not ns.skip_mlx_lm:
        dense, _ = load(ns.model)
        rows.append(("mlx-lm", measure(mlx_lm_logits(base, tokens), mlx_lm_logits(dense, tokens), V)))
    print(f"drift on the shipped sample ({len(tokens)} tokens), KL(base || combined) per token:")
    for name, r in rows:
        print(f"  {name:10s}  mean KL {r.kl_mean:.3e}  max KL {r.kl_max:.3e}  greedy differs at {r.argmax_differs} "
              f"of {r.positions}  launch-token mass max {r.launch_mass_max:.2e} (mean {r.launch_mass_mean:.2e})")
    return 0
