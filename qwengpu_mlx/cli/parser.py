"""The command line's parser: every subcommand's options, built without importing MLX,
the chat or Textual (``--help`` and a usage error answer at once)."""

from __future__ import annotations

import argparse
import math
import sys
from importlib.metadata import PackageNotFoundError, version

from qwengpu_mlx.chat.tools import MODES
from qwengpu_mlx.cli.help import DESCRIPTION, EPILOG, add_examples
from qwengpu_mlx.core.errors import LaunchError
from qwengpu_mlx.core.launch_spec import parse_dims
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MACHINES, machine_name

DEFAULT_NAME = machine_name(DEFAULT_MACHINE)
"""The named machine ``--machine default`` is (the help says which)."""

MODEL_HELP = ("demo, a Hugging Face repo id (Qwen/Qwen3.5-2B), a base directory (Hugging Face or mlx-community "
              "layout) or a checkpoint build --base wrote; a base is combined with the cached circuit on the fly")


def _version() -> str:
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


def _dims(text: str) -> int | tuple[int, ...]:
    """An argparse type: ``8`` or ``8,4`` or ``8,4,2`` (x, y, z); the sizes' bounds are the
    machine's, checked where the launch is bound."""
    try:
        return parse_dims(text)
    except LaunchError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _bytes(text: str) -> int:
    """An argparse type: a number of bytes, 0 or more."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {n}")
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


class _CommandParser(argparse.ArgumentParser):
    """``run prog.cu [options] -- ARGS...``: what follows the first ``--`` of a ``run`` is the
    program's own argv (``ns.program_args``), never this command's options: argparse alone
    would take ``-n 5`` there for an option of ``run``, or refuse it."""

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        rest: list[str] = []
        if "run" in args and "--" in args[args.index("run"):]:
            cut = args.index("--", args.index("run"))
            args, rest = args[:cut], args[cut + 1:]
        ns, extra = super().parse_known_args(args, namespace)
        if getattr(ns, "command", None) == "run":
            ns.program_args = rest
        return ns, extra


def build_parser() -> argparse.ArgumentParser:
    p = _CommandParser(prog="qwengpu-mlx", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"qwengpu-mlx {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sp, optional=False):
        sp.add_argument("source", metavar="KERNEL", nargs="?" if optional else None,
                        help="a .cu file (compiled with clang) or a .ptx file")
        sp.add_argument("--kernel", help="kernel name (unmangled); needed when the file has several")
        sp.add_argument("--frontend", choices=["clang", "nvcc"], default="clang", help="PTX producer (default clang)")
        sp.add_argument("--arg", action="append", metavar="NAME=VALUES",
                        help="one per kernel parameter: a comma list for a pointer, one value for a scalar; "
                             "integers, or decimals for a float (1.5,-2.25,3e-3,nan,inf,-inf) "
                             "(without any, the KERNEL.json beside the kernel is read when there is one)")
        sp.add_argument("--args", dest="args_file", metavar="FILE",
                        help='a launch file {"block": N, "grid": G, "shared": BYTES, "args": {NAME: value}} '
                             '(block and grid may be lists: [8, 4]); --arg overrides it')
        sp.add_argument("--block", type=_dims, default=None, metavar="X[,Y[,Z]]",
                        help="blockDim: 8, or 8,4 for blockDim.x = 8, blockDim.y = 4 (default the launch file's, "
                             "else 4; at most %d threads in all)" % DEFAULT_MACHINE.max_block_dim)
        sp.add_argument("--grid", type=_dims, default=None, metavar="X[,Y[,Z]]",
                        help="gridDim: 2, or 2,3 (default the launch file's, else 1)")
        sp.add_argument("--shared", type=_bytes, default=None, metavar="BYTES",
                        help="dynamic shared memory: the bytes extern __shared__ T s[] holds (default the "
                             "launch file's \"shared\", else 0); it counts against the machine's memory")
        machine_option(sp, default=None)

    def machine_option(sp, default="default"):
        sp.add_argument("--machine", choices=sorted(MACHINES), default=default,
                        help=f"default: the {DEFAULT_NAME} machine; published: 16 threads per block, 126 memory "
                             f"words, 32 ROM blocks; large: 128 ROM blocks, 8 warps (blockDim.x up to 32) and "
                             f"1,024 memory words; one-slot: the published one with one instruction per block (25 "
                             f"layers instead of 45; both fit Qwen3.5-2B's shape). Without it, the launch file's "
                             f"\"machine\", else default")

    c = sub.add_parser("compile", help="show a kernel's PTX, machine blocks, launch prompt, or the circuit layout")
    common(c, optional=True)
    c.add_argument("--emit", choices=["ptx", "blocks", "tokens", "layout"], default="blocks",
                   help="ptx; blocks (the machine program); tokens (the model's launch prompt, JSON ids); "
                        "layout (the circuit's residual, heads and state rows, per layer)")
    c.add_argument("--model", metavar="MODEL", help="--emit tokens: ids in this model's vocabulary: " + MODEL_HELP)

    r = sub.add_parser("run", help="run a kernel launch, or a whole CUDA program (a .cu file with main())")
    common(r)
    r.add_argument("--quiet", action="store_true",
                   help="a program (a .cu file with main()): no summary line per launch on stderr; its "
                        "arguments follow --: run prog.cu -- ARGS...")
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
    _add_chat(sub, machine_option)
    _add_tui(sub)
    _add_cache(sub)
    add_examples(sub)
    return p


def _add_chat(sub, machine_option) -> None:
    c = sub.add_parser("chat", help="chat with a Qwen3.5 model whose answers come from its own GPU layers")
    c.add_argument("--model", metavar="REPO_OR_DIR",
                   help="a Qwen3.5 chat model (Hugging Face repo id or directory, combined with the circuit on the "
                        "fly), a checkpoint build --base wrote, or demo (a toy model shipped with the package)")
    _chat_options(c)
    c.add_argument("--check", action="store_true", help="replay every launch against the reference interpreter")
    c.add_argument("--json", action="store_true", help="read one user turn per stdin line, print one JSON object "
                                                       "per turn")
    machine_option(c)


def _chat_options(c) -> None:
    """The chat session's flags (``chat.cli.settings_from`` reads them): ``chat`` and ``tui`` take the same."""
    c.add_argument("--mode", choices=MODES, default="normal",
                   help="normal: Qwen writes an integer expression (each form a ready-made kernel); "
                        "advanced: Qwen writes the CUDA kernel itself (compiler errors go back to it, 3 retries)")
    c.add_argument("--max-tokens", "-m", type=int, default=512,
                   help="maximum tokens per assistant message, reasoning included (default 512; a model that "
                        "thinks may need --max-tokens 4096)")
    c.add_argument("--thinking", action=argparse.BooleanOptionalAction, default=None,
                   help="pass enable_thinking=true (or false) to the chat template; default: the template's own")
    c.add_argument("--temp", type=float, default=0.0, help="sampling temperature (default 0: greedy)")
    c.add_argument("--top-p", type=float, default=1.0, help="sampling top-p")
    c.add_argument("--seed", type=int, default=0, help="PRNG seed")
    c.add_argument("--system-prompt", default=None, help="system prompt for the chat template")


def _add_tui(sub) -> None:
    p = sub.add_parser("tui", help="open the dashboard (chat, live launch tokens, machine state)",
                       description="The Textual dashboard: runs launches on the embedded circuit "
                                   "(no download) and streams the tokens the model writes.")
    p.add_argument("--model", metavar="REPO_OR_DIR", default=None,
                   help="a chat model, as chat --model takes it (a Qwen3.5 repo or directory, a combined "
                        "checkpoint, or demo); optional: launches need none")
    p.add_argument("--run", metavar="COMMAND", default=None,
                   help="a command to run at start, e.g. \"/run examples/kernels/dot.cu a=1,2,3 b=4,5,6 out=0 n=3\" "
                        "(the leading /run may be left out)")
    _chat_options(p)
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="start with /check off, and the chat's launches unchecked (no replay against the "
                        "reference interpreter)")
    p.set_defaults(check=True)


def _add_cache(sub) -> None:
    c = sub.add_parser("cache", help="show (info) or empty (clear) the compiled-circuit cache")
    c.add_argument("action", choices=["info", "clear"], help="info: the directory, its entries and sizes; "
                                                              "clear: remove them all (rebuilt on the next launch)")
