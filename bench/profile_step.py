"""Where a launch token's time goes, and the fast runner against the wide one, in one run.

    .venv/bin/python bench/profile_step.py [--subset] [--repeat N] [--shape narrow|qwen3.5-2b]

1. One decode token of the dot product's launch, stage by stage and layer by layer, on
   the fast runner (``qwengpu_mlx/runner.py``): every stage evaluated on its own, so the
   times add up to more than a compiled token (which fuses across stages).
2. A whole decode token and the 91-token prefill on the wide runner (the previous path,
   ``runner_wide.py``) and the fast one, interleaved, medians: the ratios.
3. ``--subset``: the representative ten kernels (divergence, loops, a shared-memory
   reduction with barriers, atomics, every shuffle mode, a grid) on both runners: the
   same tokens, the same smallest gate margin, exact against the reference.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import mlx.core as mx  # noqa: E402

from qwengpu_mlx.machine import DEFAULT_MACHINE  # noqa: E402
from qwengpu_mlx.runner import CircuitRunner, live_dims  # noqa: E402
from qwengpu_mlx.runner_wide import WideCircuitRunner  # noqa: E402
from qwengpu_mlx.runtime import CircuitStore, run_launch  # noqa: E402
from qwengpu_mlx.runtime.prompt import prompt_tokens  # noqa: E402

from model_suite import SUBSET  # noqa: E402
from oracles import ORACLES  # noqa: E402


def program(name: str):
    """(spec, bound program) of an example kernel, from its own .json."""
    import json

    from qwengpu_mlx.host.launch import bind, compile_kernel

    folder = ROOT / "examples" / "kernels"
    spec = json.loads((folder / f"{name}.json").read_text())
    return spec, bind(compile_kernel(folder / f"{name}.cu", spec["kernel"]), spec["args"], block=spec["block"],
                      grid=spec["grid"])


def _timed(f, *args):
    t = time.perf_counter()
    out = f(*args)
    mx.eval(out)
    return out, time.perf_counter() - t


def stage_profile(r: CircuitRunner, repeat: int) -> dict:
    """Seconds per (stage, layer) for one decode token, each stage evaluated alone."""
    times = defaultdict(list)
    for _ in range(repeat):
        x = r.embed([5])
        for L, (mz, ml) in enumerate(zip(r.mixers, r.mlps)):
            w_in, w_post = r.norm_w[L]
            if mz is not None:
                (qkv, z, b, a), t1 = _timed(r._mix_in, mz, w_in, x)
                (conv, _), t2 = _timed(r._conv, mz, qkv, r.conv_state[L])
                (y, _), t3 = _timed(r._recur, mz, conv, a, b, r.state[L])
                x, t4 = _timed(r._mix_out, mz, x, y, z)
                for name, t in (("mixer: norm+projection", t1), ("mixer: conv", t2),
                                ("mixer: normalize+gates+recurrence", t3), ("mixer: gated norm+out", t4)):
                    times[name, L].append(t)
            if ml is not None:
                x, t = _timed(r._ffn, ml, w_post, x, None)
                times["mlp", L].append(t)
    return {k: statistics.median(v) for k, v in times.items()}


def print_profile(med: dict) -> None:
    by_stage = defaultdict(float)
    for (stage, _), t in med.items():
        by_stage[stage] += t
    total = sum(by_stage.values())
    print(f"one decode token, stage by stage (each evaluated alone): {total * 1e3:.1f} ms")
    for stage, t in sorted(by_stage.items(), key=lambda kv: -kv[1]):
        print(f"  {stage:36s} {t * 1e3:7.2f} ms  {t / total:5.1%}")
    print("  slowest layers: " + ", ".join(f"{s.split(':')[0]} {L} {t * 1e3:.2f} ms"
                                          for (s, L), t in sorted(med.items(), key=lambda kv: -kv[1])[:6]))


def step_ratio(cc, prompt: list[int], repeat: int) -> None:
    """Decode-token and prefill medians, wide and fast interleaved (the machine is noisy)."""
    runners = {"wide": WideCircuitRunner(cc, DEFAULT_MACHINE), "fast": CircuitRunner(cc, DEFAULT_MACHINE)}
    token, prefill = defaultdict(list), defaultdict(list)
    for _ in range(max(1, repeat // 3)):
        for name, r in runners.items():
            r.reset()
            prefill[name].append(_timed(r.step, prompt)[1])
            r.step([5])
    for _ in range(repeat):
        for name, r in runners.items():
            token[name].append(_timed(r.step, [5])[1])
    tw, tf = statistics.median(token["wide"]), statistics.median(token["fast"])
    pw, pf = statistics.median(prefill["wide"]), statistics.median(prefill["fast"])
    print(f"decode token: wide {tw * 1e3:.1f} ms, fast {tf * 1e3:.1f} ms: {tw / tf:.2f}x "
          f"({1 / tf:.1f} tokens/s)")
    print(f"prefill of {len(prompt)} tokens: wide {pw:.2f} s, fast {pf:.2f} s: {pw / pf:.2f}x")
    print(f"weights held: wide {_wide_bytes(runners['wide']) / 1e6:.0f} MB, fast {runners['fast'].nbytes() / 1e6:.0f} MB")


def _wide_bytes(r: WideCircuitRunner) -> int:
    arrays = [r.embedding, r.emb_out]
    for lay in r.layers:
        for block in (lay.mixer, lay.mlp):
            arrays += [v for v in (block or {}).values() if isinstance(v, mx.array)]
    return sum(a.nbytes for a in arrays)


def subset(cc) -> int:
    """The representative ten on both runners: same tokens and margins, exact."""
    from qwengpu_mlx.host.launch import read_outputs

    bad = 0
    runners = (WideCircuitRunner(cc, DEFAULT_MACHINE), CircuitRunner(cc, DEFAULT_MACHINE))
    for name in SUBSET:
        spec, prog = program(name)
        wide, fast = (run_launch(prog, r, check=True) for r in runners)
        same = wide.tokens == fast.tokens and wide.min_margin == fast.min_margin
        exact = fast.check.exact and read_outputs(prog, fast.memory) == ORACLES[name](spec)
        bad += not (same and exact)
        print(f"  {name:22s} {len(fast.tokens):5d} tokens, same tokens {wide.tokens == fast.tokens}, "
              f"margins {wide.min_margin:.6f} / {fast.min_margin:.6f}, {'exact' if exact else 'WRONG'}")
    return bad


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--subset", action="store_true", help="also run the representative ten on both runners")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--shape", choices=["narrow", "qwen3.5-2b"], default="narrow",
                    help="qwen3.5-2b: the circuit folded as a combined checkpoint's circuit part runs it")
    ns = ap.parse_args(argv)
    store = CircuitStore()
    if ns.shape == "qwen3.5-2b":
        from qwengpu_mlx.compiler.sizing import QWEN35_2B

        cc = store.compiled(DEFAULT_MACHINE, QWEN35_2B).compact()
    else:
        cc = store.compact(DEFAULT_MACHINE)
    print(f"circuit at the {ns.shape} shape: {cc.hidden} residual dims, {len(live_dims(cc))} live")
    spec, prog = program("dot")
    prompt = prompt_tokens(prog, DEFAULT_MACHINE)
    fast = CircuitRunner(cc, DEFAULT_MACHINE)
    fast.step(prompt)
    fast.step([5])
    print_profile(stage_profile(fast, ns.repeat))
    step_ratio(cc, prompt, ns.repeat)
    if ns.subset:
        return 1 if subset(cc) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
