"""``qwengpu-mlx``: compile and run CUDA kernels on the SIMT machine.

The command-line interface is stable: scripts build on ``run --json``. Help texts and
examples: ``cli_help``; where a launch's arguments come from: ``cli_args``; progress
on stderr: ``progress``; ``cache``: ``cli_cache``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from qwengpu_mlx.cli import args as cli_args
from qwengpu_mlx.cli import progress
from qwengpu_mlx.cli.common import errors_as, launch_model, machine_for, named_machine, program_for, splice_errors
from qwengpu_mlx.cli.help import DESCRIPTION, EPILOG, add_examples
from qwengpu_mlx.core.errors import LaunchError, QwenGpuError
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MACHINES

MODEL_HELP = ("demo, a Hugging Face repo id (Qwen/Qwen3.5-2B), a base directory (Hugging Face or mlx-community "
              "layout) or a checkpoint build --base wrote; a base is combined with the cached circuit on the fly")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("qwengpu-mlx")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        return "unknown (not installed)"


def _positive(text: str) -> int:
    """An argparse type: an integer of at least 1 (argparse names the option on error)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _finite_positive(text: str) -> float:
    """An argparse type: a finite number above 0 (NaN compares false with every limit and
    inf is no limit, so either would silently skip the check it configures)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text!r}")
    return x


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="qwengpu-mlx", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"qwengpu-mlx {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sp, optional=False):
        sp.add_argument("source", metavar="KERNEL", nargs="?" if optional else None,
                        help="a .cu file (compiled with clang) or a .ptx file")
        sp.add_argument("--kernel", help="kernel name (unmangled); needed when the file has several")
        sp.add_argument("--frontend", choices=["clang", "nvcc"], default="clang", help="PTX producer (default clang)")
        sp.add_argument("--arg", action="append", metavar="NAME=VALUES",
                        help="one per kernel parameter: a comma list for a pointer, one integer for a scalar "
                             "(without any, the KERNEL.json beside the kernel is read when there is one)")
        sp.add_argument("--args", dest="args_file", metavar="FILE",
                        help='a launch file {"block": N, "grid": G, "args": {NAME: value}}; --arg overrides it')
        sp.add_argument("--block", type=int, default=None,
                        help="blockDim.x (default the launch file's, else 4; at most %d)" % DEFAULT_MACHINE.max_block_dim)
        sp.add_argument("--grid", type=int, default=None, help="gridDim.x (default the launch file's, else 1)")
        machine_option(sp, default=None)

    def machine_option(sp, default="default"):
        sp.add_argument("--machine", choices=sorted(MACHINES), default=default,
                        help="default (or published): the published machine; large: 128 ROM blocks and 8 "
                             "warps (blockDim.x up to 32); one-slot: the published one with one instruction "
                             "per block (25 layers instead of 45; both fit Qwen3.5-2B's shape). Without it, "
                             "the launch file's \"machine\", else default")

    c = sub.add_parser("compile", help="show a kernel's PTX, machine blocks, launch prompt, or the circuit layout")
    common(c, optional=True)
    c.add_argument("--emit", choices=["ptx", "blocks", "tokens", "layout"], default="blocks",
                   help="ptx; blocks (the machine program); tokens (the model's launch prompt, JSON ids); "
                        "layout (the circuit's residual, heads and state rows, per layer)")
    c.add_argument("--model", metavar="MODEL", help="--emit tokens: ids in this model's vocabulary: " + MODEL_HELP)

    r = sub.add_parser("run", help="run a kernel launch")
    common(r)
    r.add_argument("--backend", choices=["model", "reference"], default="model",
                   help="model (default): the GPU compiled into the weights of the embedded circuit-only "
                        "Qwen3.5 model writes the launch; reference: the exact interpreter")
    r.add_argument("--check", action="store_true",
                   help="model backend: replay every step against the reference interpreter (refused with "
                        "--backend reference, which is the reference)")
    r.add_argument("--json", action="store_true", help="print exactly one JSON object")
    r.add_argument("--progress", action="store_true",
                   help="show progress on stderr even with --json (progress shows only on a terminal)")
    r.add_argument("--step-budget", type=_positive, default=None,
                   help=f"stop after this many EXEC steps (default {DEFAULT_MACHINE.step_budget}). On the model "
                        f"backend a step is about 10 generated tokens (more with many lanes and stores) at about 12 "
                        f"tokens/s on a 2-core CPU, so the default lets an unbounded loop run about an hour: "
                        f"--timeout bounds the wall time")
    r.add_argument("--timeout", type=_finite_positive, default=None, metavar="SECONDS",
                   help="model backend: stop the launch after this many seconds of prefill and generation "
                        "(an error that says how far it got)")
    r.add_argument("--trace", action="store_true",
                   help="print every step (reference) or every launch token (model) as it is produced")
    r.add_argument("--model", metavar="MODEL", help="run the launch in this model's circuit, its ids in its "
                                                     "vocabulary: " + MODEL_HELP)

    k = sub.add_parser("check", help="check a launch's tokens (written by any runner, e.g. mlx-lm) against "
                                     "the reference interpreter")
    common(k)
    k.add_argument("--launch-tokens", required=True, metavar="FILE|-",
                   help="the generated token ids as a JSON list (or run --json output); - reads stdin")
    k.add_argument("--model", metavar="MODEL", help="the ids are this model's: " + MODEL_HELP)

    b = sub.add_parser("build", help="save the circuit as a standard Qwen3.5 checkpoint "
                                     "(config.json + safetensors + tokenizer files)")
    b.add_argument("--out", required=True, metavar="DIR", help="checkpoint directory to write")
    b.add_argument("--shape", choices=["narrow", "qwen3.5-2b"], default=None,
                   help="qwen3.5-2b (default: the circuit folded onto Qwen3.5-2B's widths, about 10 GB) or narrow "
                        "(the embedded circuit's own shape: far over --max-params as a dense checkpoint)")
    b.add_argument("--max-params", type=_finite_positive, default=4e9,
                   help="refuse a dense checkpoint above this many parameters (default 4e9, 16 GB as float32)")
    b.add_argument("--force", action="store_true",
                   help="replace a non-empty --out (by default it is refused: new shards beside stale ones do "
                        "not load)")
    b.add_argument("--base", metavar="REPO_OR_DIR",
                   help="splice the circuit into this Qwen3.5 model (a Hugging Face repo id or a local directory; "
                        "safetensors only, HF_HUB_OFFLINE=1 uses the local cache only)")
    b.add_argument("--revision", help="--base repo: branch, tag or commit (resolved to a commit hash)")
    machine_option(b)

    e = sub.add_parser("eval", help="measure a combined model: its text against its base, or its chat answers")
    e.add_argument("what", choices=["drift", "chat"],
                   help="drift: KL(base || combined), greedy agreement and launch-token mass on the shipped "
                        "public-domain sample, through our runner and through unmodified mlx-lm; chat: the shipped "
                        "(or --questions) question set, answered with GPU-computed numbers")
    e.add_argument("--model", required=True, metavar="DIR|REPO|demo",
                   help="drift: the combined checkpoint; chat: anything chat --model takes")
    e.add_argument("--base", metavar="REPO_OR_DIR", help="drift: the base it was built from")
    e.add_argument("--mode", choices=["normal", "advanced"], default="normal", help="chat: which question set")
    e.add_argument("--questions", metavar="FILE", help='chat: a question set {"normal": [{"question": ..., '
                                                        '"answer": N}, ...], "advanced": [...]}')
    e.add_argument("--json", action="store_true", help="chat: print one JSON object")
    e.add_argument("--thinking", action=argparse.BooleanOptionalAction, default=None,
                   help="chat: enable_thinking for the chat template (default: the template's own)")
    e.add_argument("--max-tokens", type=_positive, default=512,
                   help="chat: tokens per assistant message, reasoning included (default 512)")
    machine_option(e)
    e.add_argument("--tokens", type=_positive, default=None, help="measure only the sample's first N tokens")
    e.add_argument("--skip-mlx-lm", action="store_true", help="only our runner (the dense checkpoint is large)")

    machine_option(sub.add_parser("machine", help="print the machine's limits"))
    from qwengpu_mlx.chat.cli import add_parser as add_chat_parser
    from qwengpu_mlx.cli.cache import add_parser as add_cache_parser
    from qwengpu_mlx.tui.cli_entry import add_parser as add_tui_parser

    add_chat_parser(sub, machine_option)

    add_tui_parser(sub)
    add_cache_parser(sub)
    add_examples(sub)
    return p


def cmd_compile(ns) -> int:
    from qwengpu_mlx.host.launch import bind, compile_kernel, placeholder_args

    if ns.emit == "layout":
        from qwengpu_mlx.compiler.layout_report import layout_report
        from qwengpu_mlx.runtime import CircuitStore

        with progress.phase(ns, "compiling the circuit"):
            compiled = CircuitStore().compiled(named_machine(ns))
        print(layout_report(compiled))
        return 0
    if ns.source is None:
        raise LaunchError("compile needs a KERNEL file (only --emit layout works without one)")
    la = cli_args.resolve(ns)
    ck = compile_kernel(ns.source, la.kernel, frontend=ns.frontend)
    if ns.emit == "tokens":
        from qwengpu_mlx.runtime import prompt_tokens

        machine = named_machine(ns, la)
        layout = None
        if ns.model:
            held = launch_model(ns)
            machine, layout = held.machine, held.layout
        cli_args.check_complete(ck, la)
        prog = bind(ck, la.args, block=la.block, grid=la.grid, machine=machine)
        ids = prompt_tokens(prog, machine)
        print(json.dumps([layout.launch_id(t) for t in ids] if layout else ids))
        return 0
    if ns.emit == "ptx":
        print(ck.ptx)
        return 0
    args, note = la.args, f"; arguments from {la.spec}" if la.spec is not None else ""
    if not args:
        args = placeholder_args(ck)
        note = "; placeholder arguments (pass --arg to bind a real launch)"
    else:
        cli_args.check_complete(ck, la)
    prog = bind(ck, args, block=la.block, grid=la.grid, machine=named_machine(ns, la))
    print(f"// kernel {prog.kernel}: {len(prog.blocks)} blocks, {prog.regs_used} registers, "
          f"{prog.preds_used} predicates{note}")
    for a in prog.arrays:
        print(f"// {a.name}: words {a.base}..{a.base + a.length - 1}")
    for s in prog.shared:
        print(f"// __shared__ {s.name}: words {s.base}..{s.base + s.length - 1}")
    for name, v in prog.scalars.items():
        print(f"// {name} = {v}")
    print(prog.listing())
    return 0


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


def cmd_check(ns) -> int:
    """Check a launch written elsewhere (e.g. by unmodified mlx-lm) against the reference."""
    from qwengpu_mlx.runtime import check_launch, prompt_tokens
    from qwengpu_mlx.core.vocab import vocab_for

    machine = machine_for(ns)
    prog = program_for(ns, machine)
    if ns.launch_tokens == "-":
        text = sys.stdin.read()
    else:
        from pathlib import Path

        path = Path(ns.launch_tokens)
        if not path.is_file():
            raise LaunchError(f"--launch-tokens {path}: " + ("not a file" if path.exists() else "no such file"))
        text = path.read_text(errors="replace")
    prompt = prompt_tokens(prog, machine)
    layout = None
    if ns.model:
        layout = launch_model(ns).layout
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


def _build_base(ns) -> int:
    """``build --base``: the circuit spliced into a base Qwen3.5 checkpoint (``splice.pipeline``)."""
    from pathlib import Path

    from qwengpu_mlx.runtime.checkpoint import atomic_directory
    from qwengpu_mlx.splice.pipeline import build_from_base

    if ns.shape is not None:
        raise LaunchError("--shape does not apply with --base: the combined checkpoint takes the base's sizes")
    out = Path(ns.out)
    # the pipeline writes weights, then the tokenizer and manifest: all of it into one temporary
    # directory that becomes --out at the end, so Ctrl-C or a refusal leaves nothing half-written
    with splice_errors("build --base"), _write_errors(out), atomic_directory(out, force=ns.force) as tmp:
        report = build_from_base(ns.base, tmp, ns.machine, revision=ns.revision, max_params=ns.max_params)
    lay = report.layout
    print(f"wrote {out}: {lay.base_layers} base + {lay.circuit_layers} circuit layers, hidden {lay.hidden:,} "
          f"({lay.base_hidden:,} base dims x2 scale, circuit at {lay.circuit_offset:,}), {lay.launch_tokens:,} launch "
          f"tokens from id {lay.launch_id(0):,}; {report.bytes / 1e9:.1f} GB in {report.shards} shards, "
          f"{report.seconds:.0f} s")
    return 0


def _eval_chat(ns) -> int:
    """``eval chat``: the question set through the real chat loop (``chat.evaluate``)."""
    from pathlib import Path

    from qwengpu_mlx.chat.cli import open_model
    from qwengpu_mlx.chat.evaluate import QuestionSetError, evaluate_chat, load_questions, report_lines

    try:
        questions = load_questions(Path(ns.questions) if ns.questions else None).get(ns.mode, [])
    except QuestionSetError as e:
        raise LaunchError(f"--questions {e}") from None
    if not questions:
        raise LaunchError(f"the question set has no {ns.mode!r} questions")
    model = open_model(ns.model, MACHINES[ns.machine])

    def on_result(i, r):
        mark = "right" if r.right else "wrong"
        print(f"[{i + 1}/{len(questions)}] {mark}: {r.question} -> {r.answer!r}", file=sys.stderr, flush=True)

    from qwengpu_mlx.chat.session import ChatSettings

    settings = ChatSettings(max_tokens=ns.max_tokens, thinking=ns.thinking)
    ev = evaluate_chat(model, ns.mode, questions, settings=settings, on_result=on_result)
    print(json.dumps(ev.to_json()) if ns.json else "\n".join(report_lines(ev)))
    return 0


def cmd_eval(ns) -> int:
    """``eval drift``: the combined model's text against the base's (``splice.drift``)."""
    if ns.what == "chat":
        return _eval_chat(ns)
    if not ns.base:
        raise LaunchError("eval drift needs --base (the base the combined checkpoint was built from)")
    from qwengpu_mlx.runtime import CircuitStore
    from qwengpu_mlx.splice.drift import measure, mlx_lm_logits, ours_logits
    from qwengpu_mlx.splice.pipeline import sample_text
    from qwengpu_mlx.splice.combined_runner import open_combined
    from qwengpu_mlx.splice.source import acquire

    with splice_errors("eval drift"):
        combined = open_combined(ns.model, CircuitStore())
        base_dir = acquire(ns.base).path
    from mlx_lm.utils import load

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


def _write_errors(out):
    """``build``'s OSErrors (an unwritable place, a full disk) as this CLI's errors, naming the path."""
    from qwengpu_mlx.core.errors import OutputError

    return errors_as(OSError, lambda e: OutputError(
        f"build --out {out}: cannot read or write {e.filename or out}: {e.strerror or e}"))


def build_shape(ns) -> str:
    """``build``'s shape: --shape, else Qwen3.5-2B's (the narrow circuit is far over
    --max-params as a dense checkpoint: a default that cannot be written is no default)."""
    return ns.shape or "qwen3.5-2b"


def cmd_build(ns) -> int:
    """Write the circuit as a dense checkpoint, or say exactly why it cannot be written."""
    from pathlib import Path

    from qwengpu_mlx.runtime.checkpoint import check_output_dir

    check_output_dir(Path(ns.out), force=ns.force)  # before any work: refusals are cheap
    if ns.base:
        return _build_base(ns)
    shape = build_shape(ns)

    from qwengpu_mlx.runtime.checkpoint import save_checkpoint
    from qwengpu_mlx.compiler.sizing import QWEN35_2B, DoesNotFit, dense_parameters, needs
    from qwengpu_mlx.core.errors import ModelError
    from qwengpu_mlx.runtime import CircuitStore
    from qwengpu_mlx.core.vocab import vocab_for

    machine = MACHINES[ns.machine]
    store = CircuitStore()
    if shape == "qwen3.5-2b":
        # values folded onto 2048 physical dims, MLPs and heads spread to the shape's widths
        try:
            with progress.phase(ns, "compiling the circuit for the Qwen3.5-2B shape"):
                compiled = store.compiled(machine, QWEN35_2B)
        except DoesNotFit as e:
            s = QWEN35_2B
            raise ModelError(f"the circuit of the {ns.machine} machine does not fit the Qwen3.5-2B shape "
                                f"(hidden {s.hidden}, intermediate {s.intermediate}, {s.linear_heads} linear "
                                f"heads of {s.key_dim} x {s.value_dim}):\n  {e}") from None
        reuse = compiled.reuse
        note = f"; {reuse.logical} values on {reuse.physical} residual dims, {reuse.clear_gates} clear gates"
    else:
        with progress.phase(ns, "compiling the circuit"):
            compiled, note = store.compiled(machine), ""
    plan = compiled.plan
    n = needs(compiled.circuit.plan)
    dense = dense_parameters(plan.shape, len(plan.layers), len(plan.vocab))
    if dense > ns.max_params:
        raise ModelError(
            f"a dense checkpoint of the circuit at shape {shape} holds {dense:,} parameters "
            f"({dense * 4 / 1e12:.1f} TB as float32), over --max-params {int(ns.max_params):,}. The circuit "
            f"allocates {n.dims_used} residual dims (at least {n.reuse_bound} with every dead dim reused) and "
            f"uses up to {n.units_max} MLP units and {n.heads_max} linear heads in one layer; a Qwen3.5 "
            f"checkpoint is dense with equal layers. `qwengpu-mlx run` executes the same weights through the "
            f"compact path; --shape qwen3.5-2b (the default) folds the residual for a dense checkpoint.")
    eos = plan.vocab[vocab_for(machine).id("STOP")]  # the launch's last token: mlx-lm stops there
    with _write_errors(ns.out), progress.phase(ns, f"writing {ns.out}"):  # atomic: a temporary directory
        out = save_checkpoint(Path(ns.out), plan.config(), plan.weight_shards(), plan.vocab, eos_token=eos,
                              shards=1 + len(plan.layers), force=ns.force)  # renamed at the end; one layer dense at a time
    print(f"wrote {out} ({dense:,} parameters, {len(plan.layers)} layers{note})")
    return 0


def machine_rows(m) -> list[tuple[str, str]]:
    """The machine's limits as (what, value) rows: what a kernel may use."""
    return [("warpSize", f"{m.lanes} lanes"),
            ("warps per block", f"up to {m.max_warps} (blockDim.x <= {m.max_block_dim})"),
            ("registers", f"{m.regs} rows per lane ({m.usable_regs} usable; row 0 reads 0)"),
            ("predicates", f"{m.preds} per lane"),
            ("program ROM", f"{m.rom_blocks} blocks x {m.slots_per_block} instructions"),
            ("memory", f"{m.mem_words} words of {m.word_bits} bits (global arrays and __shared__)"),
            ("step budget", f"{m.step_budget} EXEC steps per launch (run --step-budget)")]


def cmd_machine(ns) -> int:
    """One limit a line, aligned: readable on a terminal, greppable in a pipe."""
    rows = machine_rows(MACHINES[ns.machine])
    width = max(len(k) for k, _ in rows)
    print(f"machine {ns.machine}:")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    return 0


def cmd_chat(ns) -> int:
    from qwengpu_mlx.chat.cli import run

    return run(ns)


def cmd_tui(ns) -> int:
    from qwengpu_mlx.tui.cli_entry import run

    return run(ns)


def cmd_run(ns) -> int:
    from qwengpu_mlx.cli.run import cmd_run as run

    return run(ns)


def cmd_cache(ns) -> int:
    from qwengpu_mlx.cli.cache import run

    return run(ns)


COMMANDS = {"compile": cmd_compile, "run": cmd_run, "check": cmd_check, "build": cmd_build, "eval": cmd_eval,
            "machine": cmd_machine, "tui": cmd_tui, "chat": cmd_chat, "cache": cmd_cache}


def _stdout_gone() -> None:
    """The reader closed stdout (``| head``): point it at devnull so that the interpreter's
    final flush does not fail again (Python's documented recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout has no file descriptor (captured in a test)
        pass


def main(argv: list[str] | None = None) -> int:
    """Run one command; its errors as one line (exit 1 for a kernel or launch that fails, 2 for
    a usage error: ``QwenGpuError.exit_status``), Ctrl-C as ``interrupted`` (130), a closed
    stdout pipe quietly (0: the reader had what it wanted)."""
    try:
        ns = build_parser().parse_args(argv)
        return COMMANDS[ns.command](ns)
    except QwenGpuError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:  # Ctrl-C: stop without a traceback (nothing half-written: writes are atomic)
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _stdout_gone()
        return 0


if __name__ == "__main__":
    sys.exit(main())
