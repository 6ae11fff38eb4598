"""``qwengpu-mlx check``: a launch's tokens, written by any runner (e.g. unmodified
mlx-lm), checked against everything the reference interpreter says must happen."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from qwengpu_mlx.cli.common import ModelMemo, launch_model, machine_for, program_for
from qwengpu_mlx.core.errors import LaunchError
from qwengpu_mlx.core.vocab import vocab_for
from qwengpu_mlx.runtime import check_launch, prompt_tokens


def _read_launch_tokens(text: str, prompt: list[int]) -> list[int]:
    """Token ids from JSON: a list, or an object with ``launch_tokens`` (``run --json``)."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise LaunchError(f"--launch-tokens: not JSON ({e.msg} at line {e.lineno} column {e.colno}); "
                          f"expected a list of token ids such as [9, 42, ...]") from None
    if isinstance(data, dict) and "launch_tokens" in data:
        data = data["launch_tokens"]
    if not isinstance(data, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in data):
        raise LaunchError("--launch-tokens: expected a JSON list of integer token ids, or the object "
                          "`run --json` prints (its launch_tokens)")
    if data[:len(prompt)] == prompt:  # the prompt and the launch, as mlx-lm's generate returns them
        data = data[len(prompt):]
    return data


def run(ns) -> int:
    """Check a launch written elsewhere (e.g. by unmodified mlx-lm) against the reference."""
    memo = ModelMemo()  # --model, opened once for this command
    machine = machine_for(ns, memo)
    prog = program_for(ns, machine)
    if ns.launch_tokens == "-":
        text = sys.stdin.read()
    else:
        path = Path(ns.launch_tokens)
        if not path.is_file():
            raise LaunchError(f"--launch-tokens {path}: " + ("not a file" if path.exists() else "no such file"))
        text = path.read_text(errors="replace")
    prompt = prompt_tokens(prog, machine)
    layout = None
    if ns.model:
        layout = launch_model(ns, memo).layout
        prompt = [layout.launch_id(t) for t in prompt]
    tokens = _read_launch_tokens(text, prompt)
    if layout is not None:
        text_ids = [t for t in tokens if layout.circuit_id(t) is None]
        if text_ids:
            raise LaunchError(f"--launch-tokens: token id {text_ids[0]} is a text token of {ns.model}, not a launch "
                              f"token ({layout.launch_id(0)}..{layout.vocab_size - 1})")
        tokens = [layout.circuit_id(t) for t in tokens]
    n = len(vocab_for(machine))
    bad = [t for t in tokens if not 0 <= t < n]
    if bad:
        raise LaunchError(f"--launch-tokens: token id {bad[0]} is outside the launch vocabulary (0..{n - 1})")
    report = check_launch(prog, tokens, machine)
    if report.exact:
        print(f"exact: {len(tokens)} launch tokens, {report.records_expected} records, as the reference implies")
        return 0
    print(f"MISMATCH: {report.problems[0]}")
    for p in report.problems[1:]:
        print(f"  also: {p}", file=sys.stderr)
    return 1
