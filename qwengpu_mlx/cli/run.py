"""``qwengpu-mlx run``: one launch on the model backend (or the reference), its outputs
and mlx-lm's summary lines (prompt and generation tokens and tokens/s, peak memory:
the process's resident peak beside MLX's, ``peak_memory``).

Long work (compiling, the circuit's build or cache read, the prefill, the generated
tokens) shows on stderr through ``progress``; the results go to stdout after it ends.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from qwengpu_mlx.cli import progress
from qwengpu_mlx.cli.common import ModelMemo, launch_model, machine_for, named_machine, request_for
from qwengpu_mlx.cli.peak_memory import PeakMemory, peak_memory
from qwengpu_mlx.core.errors import ExecutionError, LaunchError
from qwengpu_mlx.core.float32 import outputs_json, outputs_text
from qwengpu_mlx.core.launch_spec import dims_text
from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.core.reference import format_step
from qwengpu_mlx.host.program_build import has_main
from qwengpu_mlx.runtime import CircuitStore, launch
from qwengpu_mlx.runtime.speed import launch_stats
from qwengpu_mlx.runtime.speed import summary_lines as mlx_lm_lines


def run(ns) -> int:
    if Path(ns.source).suffix == ".cu" and Path(ns.source).is_file() and has_main(ns.source):
        return run_program(ns)
    if getattr(ns, "program_args", None):
        raise LaunchError(f"{ns.source} has no main(): the arguments after -- are a program's; a kernel's are "
                          f"--arg NAME=VALUES")
    if ns.check and ns.backend == "reference":
        raise LaunchError("--check replays the model backend's launch on the reference interpreter; with "
                          "--backend reference there is nothing to check (drop --check, or use --backend model)")
    memo = ModelMemo()  # --model, opened once for this command
    machine = machine_for(ns, memo)
    stream = sys.stderr if ns.json else sys.stdout
    trace = (lambda tok_id, tok: print(f"{tok_id:6d}  {tok}", file=stream, flush=True)) if ns.trace else None
    steps = (lambda rec: print(format_step(rec), file=stream)) if ns.trace else None
    layout = None
    try:
        with progress.display(ns, trace=trace, steps=steps) as shown:
            shown.phase(f"compiling {Path(ns.source).name}")
            req = request_for(ns, machine, backend=ns.backend, check=ns.check, step_budget=ns.step_budget,
                              timeout=ns.timeout)
            runner = None
            if ns.backend == "model" and getattr(ns, "model", None):
                shown.phase(f"opening {ns.model}")
                held = launch_model(ns, memo, runner=True)
                runner, layout = held.runner, held.layout
            result = launch(req, store=CircuitStore(), runner=runner, events=shown)
    except ExecutionError as e:
        return _check_stopped(e)
    if ns.backend == "model":
        return _report_model(ns, req, result, layout)
    if ns.json:
        print(json.dumps({"kernel": req.program.kernel, "backend": ns.backend,
                          "outputs": outputs_json(req.program, result.outputs),
                          "steps": result.steps}))
    else:
        print_outputs(req, ns.backend, result.steps, result.outputs)
    return 0


def run_program(ns) -> int:
    """A whole CUDA program: built, run with the arguments after ``--``, each launch on the backend."""
    if ns.check and ns.backend == "reference":
        raise LaunchError("--check replays each launch of the model backend on the reference interpreter; with "
                          "--backend reference there is nothing to check (drop --check, or use --backend model)")
    given = [flag for flag, value in (("--arg", ns.arg), ("--args", ns.args_file), ("--block", ns.block),
                                      ("--grid", ns.grid), ("--shared", ns.shared), ("--kernel", ns.kernel),
                                      ("--json", ns.json), ("--trace", ns.trace)) if value]
    if given or ns.frontend != "clang":
        raise LaunchError(f"{ns.source} is a program (it has main()): its launches come from its own code, so "
                          f"{', '.join(given) or '--frontend nvcc'} has nothing to set; its arguments follow --")
    # lazy: a whole program's runner (its host build, its launch process) is start-up time a kernel's run never uses
    from qwengpu_mlx.runtime.program_run import ProgramOptions, run_cuda_program

    memo = ModelMemo()
    # a program runs on the large machine unless told otherwise: a tutorial's arrays and
    # 32-thread blocks need its 4 KB and 32 threads (the published machine has 504 bytes, 16)
    machine = machine_for(ns, memo) if getattr(ns, "model", None) else \
        named_machine(ns) if ns.machine else MACHINES["large"]
    runner = launch_model(ns, memo, runner=True).runner if ns.backend == "model" and ns.model else None
    options = ProgramOptions(machine=machine, backend=ns.backend, check=ns.check, quiet=ns.quiet,
                             step_budget=ns.step_budget, timeout=ns.timeout)
    return run_cuda_program(ns.source, ns.program_args, options, store=CircuitStore(), runner=runner)


def _check_stopped(e: ExecutionError) -> int:
    """The model stopped the launch: with --check, say where it left the reference (exit 1)."""
    checked = getattr(e, "launch", None)
    if checked is None or checked.check is None or checked.check.exact:
        raise e
    print(f"error: {e}", file=sys.stderr)
    for p in checked.check.problems:
        print(f"check: {p}", file=sys.stderr)
    return 1


def print_outputs(req, backend, steps, outputs) -> None:
    """The outputs under a header line giving the launch's dims as the user wrote them (``block 8,4``)."""
    prog = req.program
    print(f"kernel {prog.kernel} on the {backend} backend: {steps} steps "
          f"(block {dims_text(req.block)}, grid {dims_text(req.grid)}, {len(prog.blocks)} ROM blocks, "
          f"{prog.regs_used} registers)")
    for name, vals in outputs.items():
        print(f"  {name} = {outputs_text(prog, name, vals)}")


def speed_figures(launch, peak: PeakMemory) -> dict:
    """mlx-lm's figures for one launch: the prompt's prefill and the generation apart."""
    st = launch_stats(launch)
    return {"prompt_tokens": st.prompt_tokens, "prompt_tps": round(st.prompt_tps, 3),
            "generation_tokens": st.generation_tokens, "generation_tps": round(st.generation_tps, 3),
            **peak.figures()}


def summary_lines(launch, peak: PeakMemory) -> list[str]:
    """mlx-lm's summary lines for one launch (the chat prints them for a turn), the peak
    memory's saying what it measures: MLX's figure alone is 0 on the native step."""
    *speed, _ = mlx_lm_lines(launch_stats(launch), peak.mlx_gb)
    return [*speed, peak.line()]


def model_record(ns, prog, launch, layout, peak: PeakMemory) -> dict:
    """``run --json`` on the model backend: its stable keys, then the prefill/generation split."""
    ids = [layout.launch_id(t) for t in launch.tokens] if layout else launch.tokens
    info = {"kernel": prog.kernel, "backend": "model", "outputs": outputs_json(prog, launch.outputs),
            "steps": launch.steps,
            "tokens": len(launch.tokens), "launch_tokens": ids, "tokens_per_s": round(launch.tokens_per_s, 2),
            **speed_figures(launch, peak)}
    if ns.check:
        info["exact"] = launch.check.exact
        info["min_margin"] = round(launch.min_margin, 6) if launch.min_margin is not None else None
        info["min_state_margin"] = round(launch.min_state_margin, 6)
    return info


def _report_model(ns, req, launch, layout) -> int:
    peak = peak_memory()
    info = model_record(ns, req.program, launch, layout, peak)
    if ns.json:
        print(json.dumps(info))
    else:
        print_outputs(req, "model", launch.steps, launch.outputs)
        if ns.check:
            print("  check: " + ("exact" if launch.check.exact else "MISMATCH") +
                  f" ({launch.check.records_expected} records checked; smallest gate margin "
                  f"{info['min_margin']} bits of 0.5, smallest state-bit margin {info['min_state_margin']} of 1.0)")
        for line in summary_lines(launch, peak):
            print(line)
    problems = launch.check.problems if ns.check else []
    for p in problems:
        print(f"check: {p}", file=sys.stderr)
    return 0 if not problems else 1
