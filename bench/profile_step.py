"""Where a launch token's time goes, and the three runners against each other, in one run.

    .venv/bin/python -m bench.profile_step [--subset] [--repeat N] [--shape narrow|qwen3.5-2b] [--machines [--layers]]

1. One decode token of the dot product's launch, stage by stage and layer by layer, on
   the MLX-ops runner (``qwengpu_mlx/runtime/circuit_runner.py``): every stage evaluated on its own, so
   the times add up to more than a compiled token (which fuses across stages).
2. The same token on the native step (``native_step.py``): its stages timed inside the
   one primitive (``native/circuit_step.cpp``, a profiling plan).
3. A whole decode token and the dot's prefill on the wide runner (``tests/support/runner_wide.py``),
   the MLX-ops runner and the native step, interleaved, medians: the ratios.
4. ``--subset``: the representative ten kernels (divergence, loops, a shared-memory
   reduction with barriers, atomics, every shuffle mode, a grid) on the MLX-ops runner
   and the native step: the same tokens, the same smallest gate margin, exact against
   the reference and the oracle.
5. ``--machines`` (alone): the published and the large machine's native step over
   ``bench/machines.py``'s kernels: each stage's CPU time per token and the work
   (product terms, heads, conv channels, MLP units, logit terms, live residual dims), and
   each part's CPU time per layer that has it (the machines differ in how many layers
   have a mixer and an MLP: a stage of the large machine's 1,024-word memory takes 32
   heads, one layer of the narrow circuit, two of Qwen3.5-2B's 16 in a fold).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

import mlx.core as mx  # noqa: E402

from qwengpu_mlx.runtime import native  # noqa: E402
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE  # noqa: E402
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner, live_dims  # noqa: E402
from tests.support.runner_wide import WideCircuitRunner  # noqa: E402
from qwengpu_mlx.runtime import CircuitStore  # noqa: E402
from tests.support.launching import bound_program, on_runner  # noqa: E402
from qwengpu_mlx.runtime.prompt import prompt_tokens  # noqa: E402

from bench.machines import EXAMPLES, MACHINES, SPEED_KERNELS, _spec  # noqa: E402
from bench.model_suite import SUBSET  # noqa: E402
from tests.support.oracles import ORACLES  # noqa: E402


def program(name: str):
    """(spec, bound program) of an example kernel, from its own .json."""
    import json

    from tests.support.launching import bound_program

    folder = ROOT / "examples" / "kernels"
    spec = json.loads((folder / f"{name}.json").read_text())
    return spec, bound_program(folder / f"{name}.cu", spec["kernel"], args=spec["args"], block=spec["block"],
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


def print_native_profile(r: CircuitRunner, prompt: list[int]) -> None:
    """The native step's stages, timed inside the primitive over 200 decode tokens."""
    r.step(prompt)
    packed = r._packed
    r._packed = None
    stages = r.native.profiled(r.embed([5]), packed, 200)
    total = sum(stages.values())
    print(f"the same token on the native step, stage by stage (inside the one primitive): {total * 1e3:.2f} ms")
    for stage, t in sorted(stages.items(), key=lambda kv: -kv[1]):
        print(f"  {stage:46s} {t * 1e3:7.3f} ms  {t / total:5.1%}")


def step_ratio(cc, prompt: list[int], repeat: int, module) -> None:
    """Decode-token and prefill medians, the runners interleaved (the machine is noisy)."""
    runners = {"wide": WideCircuitRunner(cc, PUBLISHED_MACHINE), "ops": CircuitRunner(cc, PUBLISHED_MACHINE),
               "native": CircuitRunner(cc, PUBLISHED_MACHINE, native=module)}
    token, prefill = defaultdict(list), defaultdict(list)
    for _ in range(max(1, repeat // 3)):
        for name, r in runners.items():
            r.reset()
            prefill[name].append(_timed(r.step, prompt)[1])
            r.step([5])
    for _ in range(repeat):
        for name, r in runners.items():
            for _ in range(1 if name == "wide" else 5):  # the fast ones several times: their times are short
                token[name].append(_timed(r.step, [5])[1])
    t = {k: statistics.median(v) for k, v in token.items()}
    p = {k: statistics.median(v) for k, v in prefill.items()}
    print(f"decode token: wide {t['wide'] * 1e3:.1f} ms, MLX ops {t['ops'] * 1e3:.1f} ms, native "
          f"{t['native'] * 1e3:.2f} ms: native/ops {t['ops'] / t['native']:.1f}x, native/wide "
          f"{t['wide'] / t['native']:.1f}x ({1 / t['native']:.0f} tokens/s)")
    print(f"prefill of {len(prompt)} tokens: wide {p['wide']:.2f} s, MLX ops {p['ops']:.2f} s, native "
          f"{p['native']:.3f} s: native/ops {p['ops'] / p['native']:.1f}x")
    print(f"weights held: wide {_wide_bytes(runners['wide']) / 1e6:.0f} MB, MLX ops {runners['ops'].nbytes() / 1e6:.0f} MB"
          f" (+ its copy by row for the native step: {runners['native'].native.nbytes() / 1e6:.0f} MB)")


def _wide_bytes(r: WideCircuitRunner) -> int:
    arrays = [r.embedding, r.emb_out]
    for lay in r.layers:
        for block in (lay.mixer, lay.mlp):
            arrays += [v for v in (block or {}).values() if isinstance(v, mx.array)]
    return sum(a.nbytes for a in arrays)


def subset(cc, module) -> int:
    """The representative ten on the MLX-ops runner and the native step: same tokens and
    margins, exact; the launch tokens/s of each."""
    from qwengpu_mlx.core.readout import read_outputs

    bad = 0
    runners = (CircuitRunner(cc, PUBLISHED_MACHINE), CircuitRunner(cc, PUBLISHED_MACHINE, native=module))
    speed = defaultdict(list)
    for name in SUBSET:
        spec, prog = program(name)
        ops, nat = (on_runner(prog, r, check=True) for r in runners)
        speed["ops"].append((len(ops.tokens), ops.generate_seconds))
        speed["native"].append((len(nat.tokens), nat.generate_seconds))
        same = ops.tokens == nat.tokens and abs(ops.min_margin - nat.min_margin) <= 1e-6
        exact = nat.check.exact and read_outputs(prog, nat.memory) == ORACLES[name](spec)
        bad += not (same and exact)
        print(f"  {name:22s} {len(nat.tokens):5d} tokens, same tokens {ops.tokens == nat.tokens}, "
              f"margins {ops.min_margin:.6f} / {nat.min_margin:.6f}, {'exact' if exact else 'WRONG'}, "
              f"{ops.tokens_per_s:5.1f} / {nat.tokens_per_s:5.1f} tokens/s")
    rate = {k: sum(n for n, _ in v) / sum(s for _, s in v) for k, v in speed.items()}
    print(f"  all ten: {sum(n for n, _ in speed['native'])} tokens; decode {rate['ops']:.1f} tokens/s on MLX ops, "
          f"{rate['native']:.1f} on the native step: {rate['native'] / rate['ops']:.1f}x")
    return bad


def profiled_runners(blocks: bool) -> dict | None:
    """Each machine's runner after the bench's speed kernels (``bench/machines.py``) on
    profiling plans (``blocks``: per layer block), after one unprofiled round, launch by
    launch in turn (the machine's load falls on both alike); None where there is no
    native step."""
    runners = {name: CircuitStore().runner(machine) for name, machine in MACHINES.items()}
    for name, runner in runners.items():
        if getattr(runner, "native", None) is None:
            print(f"{name}: no native step here")
            return None
    programs = {name: [bound_program(EXAMPLES / f"{k}.cu", _spec(k)["kernel"], args=_spec(k)["args"],
                                     block=_spec(k)["block"], grid=_spec(k)["grid"], machine=MACHINES[name])
                       for k in SPEED_KERNELS] for name in runners}
    for profiled in (False, True):
        if profiled:
            for runner in runners.values():
                runner.native.start_profile(blocks=blocks)
        for k in range(len(SPEED_KERNELS)):
            for name, runner in runners.items():
                on_runner(programs[name][k], runner)
    return runners


def layers_profile() -> None:
    """Each machine's layer blocks' CPU time per step call over the speed kernels, in
    program order, side by side, and their sums by kind: where one machine's token costs
    more than the other's, layer by layer (a clock read per block, none inside one)."""
    runners = profiled_runners(blocks=True)
    if runners is None:
        return
    reports = {name: r.native.block_report() for name, r in runners.items()}
    names = list(reports)
    print("per step call (prompt and launch tokens) over " + ", ".join(SPEED_KERNELS) + ": CPU us per layer block")
    for kind in ("mixer", "mlp", "logits"):
        print(f"  {kind + ' blocks':30}" + "".join(
            f"{sum(t for b, t in reports[n] if kind in b) * 1e6:12.1f} ({sum(kind in b for b, _ in reports[n])})"
            for n in names))
    print(f"  {'total':30}" + "".join(f"{sum(t for _, t in reports[n]) * 1e6:12.1f}     " for n in names))
    print("  " + "".join(f"{n + ' block':>30}{'us':>8}" for n in names))
    for i in range(max(len(r) for r in reports.values())):
        cells = [reports[n][i] if i < len(reports[n]) else ("", None) for n in names]
        print("  " + "".join(f"{b:>30}{'' if t is None else f'{t * 1e6:8.1f}':>8}" for b, t in cells))


def machines_profile() -> None:
    """The bench's speed kernels (``bench/machines.py``) on each machine's native step:
    each stage's CPU time and the work per token, side by side."""
    rows = {}
    runners = profiled_runners(blocks=False)
    if runners is None:
        return
    for name, runner in runners.items():
        seconds, work = runner.native.profile_report()
        work = {"mixer layers": len(runner.native.layout), "MLP layers": runner.native.mlp_layers, **work}
        rows[name] = seconds, work
    names = list(rows)
    print("per step call (prompt and launch tokens) over " + ", ".join(SPEED_KERNELS) + ": CPU us / work")
    print(f"{'':46}" + "".join(f"{n:>14}" for n in names))
    for stage in rows[names[0]][0]:
        print(f"  {stage:44}" + "".join(f"{rows[n][0][stage] * 1e6:14.1f}" for n in names))
    print(f"  {'total':44}" + "".join(f"{sum(rows[n][0].values()) * 1e6:14.1f}" for n in names))
    for what in rows[names[0]][1]:
        print(f"  {what:44}" + "".join(f"{rows[n][1][what]:14,.0f}" for n in names))
    for part, layers in (("mixer", "mixer layers"), ("mlp", "MLP layers")):
        per = {n: sum(t for stage, t in rows[n][0].items() if stage.startswith(part)) / rows[n][1][layers]
               for n in names}
        print(f"  {part + ' CPU us per ' + layers[:-1]:44}" + "".join(f"{per[n] * 1e6:14.1f}" for n in names))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--subset", action="store_true", help="also run the representative ten on both runners")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--shape", choices=["narrow", "qwen3.5-2b"], default="narrow",
                    help="qwen3.5-2b: the circuit folded as a combined checkpoint's circuit part runs it")
    ap.add_argument("--machines", action="store_true",
                    help="only: each machine's native step over bench/machines.py's kernels, stage CPU time and work")
    ap.add_argument("--layers", action="store_true",
                    help="with --machines: each layer block's CPU time instead of the stages'")
    ns = ap.parse_args(argv)
    if ns.layers and not ns.machines:
        ap.error("--layers goes with --machines")
    if ns.machines:
        layers_profile() if ns.layers else machines_profile()
        return 0
    store = CircuitStore()
    if ns.shape == "qwen3.5-2b":
        from qwengpu_mlx.compiler.sizing import QWEN35_2B

        cc = store.compiled(PUBLISHED_MACHINE, QWEN35_2B).compact()
    else:
        cc = store.compact(PUBLISHED_MACHINE)
    print(f"circuit at the {ns.shape} shape: {cc.hidden} residual dims, {len(live_dims(cc))} live")
    spec, prog = program("dot")
    prompt = prompt_tokens(prog, PUBLISHED_MACHINE)
    found = native.load()
    if found.module is None:
        print(f"no native step here: {found.reason}")
        return 1
    ops = CircuitRunner(cc, PUBLISHED_MACHINE)
    ops.step(prompt)
    ops.step([5])
    print_profile(stage_profile(ops, ns.repeat))
    print_native_profile(CircuitRunner(cc, PUBLISHED_MACHINE, native=found.module), prompt)
    step_ratio(cc, prompt, ns.repeat, found.module)
    if ns.subset:
        return 1 if subset(cc, found.module) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
