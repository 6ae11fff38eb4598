"""Pieces every command-line subcommand shares: error conversion, the machine a launch
runs on, and a kernel compiled and bound from the command line's arguments."""

from __future__ import annotations

from contextlib import contextmanager

from . import cli_args
from .machine import MACHINES


@contextmanager
def errors_as(caught, convert):
    """Run a step, turning the ``caught`` exceptions into this CLI's errors (``convert(e)``:
    exit 2 with a message, no traceback)."""
    try:
        yield
    except caught as e:
        raise convert(e) from None


def splice_errors(what: str):
    """Run a splice step, its typed refusals as this CLI's errors."""
    from .errors import ModelError
    from .splice.errors import SPLICE_ERRORS

    return errors_as(SPLICE_ERRORS, lambda e: ModelError(f"{what}: {e}"))


def combined_record(path: str):
    """(machine, layout) of a combined checkpoint build --base wrote, or a clear error."""
    from .splice.runner import recorded_machine

    with splice_errors("--model"):
        return recorded_machine(path)


def named_machine(ns, launch: cli_args.LaunchArgs | None = None):
    """``--machine``, else the machine the launch file names, else the default (published) one."""
    name = getattr(ns, "machine", None) or (launch.machine if launch is not None else None) or "default"
    return MACHINES[name]


def machine_for(ns):
    """``--machine`` (or the launch file's), or the machine a combined checkpoint (``--model``) was built with."""
    if getattr(ns, "model", None):
        return combined_record(ns.model)[0]
    if getattr(ns, "machine", None) or getattr(ns, "source", None) is None:
        return named_machine(ns)
    return named_machine(ns, cli_args.resolve(ns))


def program_for(ns, machine):
    """The kernel of ``ns.source`` compiled and bound to the launch ``cli_args`` resolves
    (``--arg``, ``--args``, ``KERNEL.json``); a missing argument is refused with the syntax."""
    from .host.launch import bind, compile_kernel

    la = cli_args.resolve(ns)
    ck = compile_kernel(ns.source, la.kernel, frontend=ns.frontend)
    cli_args.check_complete(ck, la)
    return bind(ck, la.args, block=la.block, grid=la.grid, machine=machine)
