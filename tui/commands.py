"""Chat-input commands: ``/run``, ``/check``, ``/kernels``, ``/help``.

Parsing only (no UI): the screen turns a line of input into a :class:`Command`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from qwengpu_mlx.core.errors import LaunchError
from qwengpu_mlx.core.launch_spec import dims_text, dims_value, parse_dims, read_launch_spec, spec_beside
from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.host.program_build import has_main

REPO_ROOT = Path(__file__).resolve().parents[1]

HELP = """\
commands
  /run KERNEL.cu NAME=v1,v2 NAME=v ... [--block X[,Y[,Z]]] [--grid X[,Y[,Z]]]
       [--shared BYTES] [--kernel NAME] [--machine NAME]
        run a launch on the GPU compiled into the model; tokens stream live
        e.g. /run examples/kernels/dot.cu a=1,2,3 b=4,5,6 out=0 n=3
        KERNEL may be a name from /kernels; without NAME=... the kernel's .json arguments are used;
        --machine picks the machine (as run --machine; else the one its .json names, else the default)
  /run PROGRAM.cu [-- ARGS...]
        a file with main() runs as a program: its output here, each launch in the launch pane
        e.g. /run examples/programs/argv_scale.cu -- 5 3
  /check on|off   replay each launch against the reference interpreter (now: {check})
  /kernels        pick one of examples/kernels/*.cu (type to filter, enter runs it)
  /help           this text
keys
  ctrl+r rerun the last launch   escape / ctrl+c cancel a running launch
  ctrl+l clear the panes         ctrl+q quit
  up/down earlier input lines    tab / right take the dimmed completion
  ctrl+p the command palette (every action above, and "run NAME" for each kernel)
plain text is sent to the chat model (needs a Qwen3.5 checkpoint: --model DIR|REPO)"""


class JobEnd:
    """A finished job's status as the screen shows it (a launch's or a program's outcome,
    each a dataclass with ``cancelled`` and ``error``): cancelled, error or done."""

    @property
    def status(self) -> str:
        if self.cancelled:
            return "cancelled"
        if self.error:
            return "error"
        return "done"


class CommandError(ValueError):
    pass


@dataclass
class RunRequest:
    source: Path
    args: dict
    block: int | tuple[int, ...] = 4  # blockDim: an int, or (x, y) / (x, y, z)
    grid: int | tuple[int, ...] = 1
    kernel: str | None = None
    text: str = ""  # the command as typed
    machine: str = "default"  # the named machine the launch file asks for (``qwengpu_mlx.core.machine.MACHINES``)
    shared: int = 0  # dynamic shared memory, bytes (``extern __shared__``)

    def describe(self) -> str:
        args = " ".join(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in self.args.items())
        extra = "" if (self.block, self.grid) == (4, 1) else f" --block {dims_text(self.block)} --grid {dims_text(self.grid)}"
        extra += f" --shared {self.shared}" if self.shared else ""
        extra += f" --machine {self.machine}" if self.machine != "default" else ""
        return f"{self.source.name} {args}{extra}".strip()


@dataclass
class ProgramRequest:
    """A whole CUDA program (a file with ``main()``) and its command-line arguments."""

    source: Path
    args: list[str] = field(default_factory=list)
    text: str = ""  # the command as typed
    machine: str = "large"  # as ``qwengpu-mlx run prog.cu``: a tutorial's arrays and 32-thread blocks need it

    def describe(self) -> str:
        return " ".join([self.source.name] + (["--", *map(shlex.quote, self.args)] if self.args else []))


@dataclass
class Command:
    name: str  # "run", "check", "kernels", "help", "chat"
    run: RunRequest | ProgramRequest | None = None
    flag: bool | None = None
    text: str = ""
    extra: dict = field(default_factory=dict)


def examples_dir(base: Path | None = None) -> Path:
    for root in ([base] if base else []) + [Path.cwd(), REPO_ROOT]:
        d = root / "examples" / "kernels" if (root / "examples").is_dir() else root
        if d.is_dir() and any(d.glob("*.cu")):
            return d
    return REPO_ROOT / "examples" / "kernels"


def resolve_source(text: str, kernels: Path | None = None) -> Path:
    """A path (relative to the working directory or the repository) or a kernel name."""
    p = Path(text).expanduser()
    candidates = [p, REPO_ROOT / p]
    if p.suffix == "" or not p.parent.parts:
        for k in (kernels or examples_dir(), REPO_ROOT / "examples" / "programs"):
            candidates += [k / p.name, k / (p.name + ".cu")]
    for c in candidates:
        if c.is_file():
            return c
    raise CommandError(f"{text}: no such kernel file (try /kernels)")


def _parse_value(name: str, text: str):
    return text  # the host binds strings as the CLI does: "1,2,3" or "7"


def _option_value(key: str, val: str):
    """``--kernel NAME``, ``--machine NAME``, ``--shared BYTES``, ``--block 8`` or ``--block 8,4`` (``--grid`` alike)."""
    if key == "kernel":
        return val
    if key == "machine":
        if val not in MACHINES:
            raise CommandError(f"/run: --machine {val!r}: one of {', '.join(MACHINES)}")
        return val
    if key == "shared":
        try:
            n = int(val, 0)
        except ValueError:
            n = -1
        if n < 0:
            raise CommandError(f"/run: --shared {val!r} is not a number of bytes")
        return n
    try:
        return parse_dims(val, key)
    except LaunchError:
        raise CommandError(f"/run: --{key} {val!r}: expected X, X,Y or X,Y,Z (integers)") from None


def parse_program(source: Path, words: list[str], full: str = "") -> ProgramRequest:
    """``/run PROGRAM.cu [-- ARGS...]``: the words after ``--`` are the program's ``argv``."""
    if words and words[0] != "--":
        raise CommandError(f"/run: {source.name} is a program (it has main()): its launches come from its own "
                           f"code, and its arguments follow --: /run {source.name} -- {' '.join(words)}")
    return ProgramRequest(source, words[1:], full)


def parse_run(rest: str, kernels: Path | None = None, full: str = "") -> RunRequest | ProgramRequest:
    try:
        words = shlex.split(rest)
    except ValueError as e:
        raise CommandError(f"/run: {e}") from None
    if not words:
        raise CommandError("/run needs a kernel: /run KERNEL.cu NAME=values ... (see /kernels)")
    source = resolve_source(words[0], kernels)
    if source.suffix == ".cu" and has_main(source):
        return parse_program(source, words[1:], full)
    args: dict = {}
    opts: dict = {}
    i = 1
    while i < len(words):
        w = words[i]
        if w.startswith("--"):
            key, _, val = w[2:].partition("=")
            if key not in ("block", "grid", "shared", "kernel", "machine"):
                raise CommandError(f"/run: unknown option --{key} (use --block X[,Y[,Z]], --grid X[,Y[,Z]], "
                                   f"--shared BYTES, --kernel NAME, --machine NAME)")
            if not val:
                i += 1
                if i >= len(words):
                    raise CommandError(f"/run: --{key} needs a value")
                val = words[i]
            opts[key] = _option_value(key, val)
        elif "=" in w:
            name, _, value = w.partition("=")
            name = name.strip()
            if name in args:
                raise CommandError(f"/run: argument {name} given twice")
            args[name] = _parse_value(name, value.strip())
        else:
            raise CommandError(f"/run: {w!r}: expected NAME=v1,v2,... or NAME=v")
        i += 1
    desc = kernel_description(source)
    if not args and desc is not None:  # the kernel's own launch arguments
        args = dict(desc.get("args", {}))
        opts.setdefault("block", desc.get("block", 4))
        opts.setdefault("grid", desc.get("grid", 1))
        opts.setdefault("shared", desc.get("shared", 0))
        opts.setdefault("kernel", desc.get("kernel"))
    machine = opts.get("machine") or (desc or {}).get("machine", "default")
    return RunRequest(source, args, dims_value(opts.get("block", 4)), dims_value(opts.get("grid", 1)), opts.get("kernel"),
                      full, machine, opts.get("shared", 0))


def kernel_description(source: Path) -> dict | None:
    """The launch file beside the kernel, read as the command line reads it
    (``qwengpu_mlx.core.launch_spec``); None when there is none or it is malformed."""
    j = spec_beside(source)
    if j is None:
        return None
    try:
        return read_launch_spec(j)
    except LaunchError:
        return None


def list_kernels(kernels: Path | None = None) -> list[tuple[str, str]]:
    """(file name, description) for every examples/kernels/*.cu."""
    d = kernels or examples_dir()
    out = []
    for cu in sorted(d.glob("*.cu")):
        desc = kernel_description(cu) or {}
        out.append((cu.name, desc.get("description", "")))
    return out


def parse(text: str, kernels: Path | None = None) -> Command:
    text = text.strip()
    if not text.startswith("/"):
        return Command("chat", text=text)
    head, _, rest = text[1:].partition(" ")
    head = head.lower()
    if head == "run":
        return Command("run", run=parse_run(rest, kernels, text), text=text)
    if head == "check":
        arg = rest.strip().lower()
        if arg in ("on", "off"):
            return Command("check", flag=arg == "on", text=text)
        if arg == "":
            return Command("check", flag=None, text=text)
        raise CommandError("/check on|off")
    if head in ("kernels", "help"):
        return Command(head, text=text)
    raise CommandError(f"unknown command /{head} (try /help)")
