"""Pieces every command-line subcommand shares: error conversion, the machine a launch
runs on, and a kernel compiled and bound from the command line's arguments."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import replace

from qwengpu_mlx.cli import args as cli_args
from qwengpu_mlx.core.errors import ModelError
from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.runtime import CircuitStore, LaunchRequest, bind_request, compile_request


@contextmanager
def errors_as(caught, convert):
    """Run a step, turning the ``caught`` exceptions into this CLI's errors (``convert(e)``:
    exit 2 with a message, no traceback)."""
    try:
        yield
    except caught as e:
        raise convert(e) from None


class ModelMemo:
    """One command's ``--model``, opened at most once: the command makes one and hands it to
    each :func:`launch_model` / :func:`machine_for` it calls (its machine first, say, then its runner)."""

    def __init__(self):
        self.held = None  # splice.open.LaunchModel, once opened


def launch_model(ns, memo: ModelMemo | None = None, *, runner: bool = False):
    """``--model`` as a launch sees it (``splice.open.open_launch_model``, with the chat's demo:
    demo, a repo id, a base directory or a combined checkpoint): its machine, its ids and, with
    ``runner``, the circuit's runner; opened once per ``memo`` (a runner built on the first ask
    for one). An unusable one is a clear error (exit 2)."""
    # lazy: opening --model needs the chat's demo and mlx-lm (seconds of imports) that a
    # launch on the embedded circuit never uses
    from qwengpu_mlx.chat.models import open_launch_model
    from qwengpu_mlx.splice.machine_choice import named_machine as chosen_machine
    from qwengpu_mlx.splice.open import ModelOpenError

    memo = memo if memo is not None else ModelMemo()
    held = memo.held
    if held is not None and (held.runner is not None or not runner):
        return held
    try:
        held = open_launch_model(ns.model, CircuitStore(), machine=chosen_machine(_stated_machine(ns)),
                                 runner=runner,
                                 log=lambda line: print(f"[{line}]", file=sys.stderr, flush=True))
    except ModelOpenError as e:
        raise ModelError(f"--model {ns.model}: {e}") from None
    memo.held = held
    return held


def named_machine(ns, launch: cli_args.LaunchArgs | None = None):
    """``--machine``, else the machine the launch file names, else the default one
    (``core.machine.DEFAULT_MACHINE``, which ``machine`` prints)."""
    name = getattr(ns, "machine", None) or (launch.machine if launch is not None else None) or "default"
    return MACHINES[name]


def machine_for(ns, memo: ModelMemo | None = None):
    """``--machine`` (or the launch file's), or the machine a combined checkpoint (``--model``) was built with."""
    if getattr(ns, "model", None):
        return launch_model(ns, memo).machine
    return _flag_machine(ns)


def _stated_machine(ns) -> str | None:
    """The machine's name ``--machine`` or the launch file states; None where neither does
    (with a base, ``splice.machine_choice.named_machine`` reads None and the ``default`` alias
    alike: the default machine when its circuit fits the base, else the published one)."""
    name = getattr(ns, "machine", None)
    if not name and getattr(ns, "source", None) is not None:
        name = cli_args.resolve(ns).machine
    return name


def _flag_machine(ns):
    """``--machine``, else the launch file's, else the default."""
    if getattr(ns, "machine", None) or getattr(ns, "source", None) is None:
        return named_machine(ns)
    return named_machine(ns, cli_args.resolve(ns))


def stated_request(ns, la: cli_args.LaunchArgs, machine, **fields) -> LaunchRequest:
    """The kernel and launch the command line states (``la``: its resolved arguments), unbound."""
    return LaunchRequest(source=ns.source, kernel=la.kernel, args=la.args, block=la.block, grid=la.grid,
                         shared=la.shared, machine=machine, frontend=ns.frontend, **fields)


def request_for(ns, machine, **fields) -> LaunchRequest:
    """The launch ``ns`` states (``--arg``, ``--args``, ``KERNEL.json``; ``fields``: the
    backend, the check, the bounds), bound to its program: a missing argument is refused
    with the syntax that sets it, before any model is loaded."""
    la = cli_args.resolve(ns)
    req = stated_request(ns, la, machine, **fields)
    cli_args.check_complete(compile_request(req), la)
    return replace(req, program=bind_request(req))


def program_for(ns, machine):
    """The kernel of ``ns.source`` compiled and bound (see :func:`request_for`)."""
    return request_for(ns, machine).program
