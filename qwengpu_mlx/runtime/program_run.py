"""``qwengpu-mlx run prog.cu [-- ARGS...]`` for a file with ``main()``: build, run, report.

The program is compiled into a temporary directory (removed afterwards, whatever
happens), its device is a :class:`~qwengpu_mlx.runtime.program.ProgramDevice` on the
chosen backend, and it runs as a child process (``program_process``). Each launch's
summary line goes to stderr as it ends (``--quiet``: none); the command's exit status is
the program's, or 1 where ``--check`` found a launch the model wrote differently from the
reference interpreter and the program itself succeeded.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig
from qwengpu_mlx.host.program_build import build_host, compile_device
from qwengpu_mlx.runtime.program import LaunchRecord, ProgramDevice
from qwengpu_mlx.runtime.launch import LaunchEvents
from qwengpu_mlx.runtime.program_process import run_program


@dataclass
class ProgramOptions:
    machine: MachineConfig = DEFAULT_MACHINE
    backend: str = "model"
    check: bool = False
    quiet: bool = False
    step_budget: int | None = None
    timeout: float | None = None


def _summary_sink(quiet: bool):
    def show(record: LaunchRecord) -> None:
        print(record.summary(), file=sys.stderr, flush=True)
    return (lambda record: None) if quiet else show


class CircuitLoading(LaunchEvents):
    """Says on stderr when the first launch waits for the circuit (built once, then read
    from the cache): seconds in which the program would otherwise seem to hang."""

    def phase(self, text: str) -> None:
        if text.startswith("loading the circuit"):
            print(f"[{text}]", file=sys.stderr, flush=True)


def run_cuda_program(source: str | Path, args: list[str], options: ProgramOptions, *, store=None,
                     runner=None) -> int:
    """Compile and run the program; its exit status."""
    code = compile_device(source)
    device = ProgramDevice(code, options.machine, backend=options.backend, check=options.check, store=store,
                           runner=runner, step_budget=options.step_budget, timeout=options.timeout,
                           on_launch=_summary_sink(options.quiet), events=None if options.quiet else CircuitLoading())
    with tempfile.TemporaryDirectory(prefix="qwengpu-program-") as tmp:
        executable = build_host(source, Path(tmp))
        status = run_program(executable, args, device)
    if status == 0 and device.mismatches:
        print(f"check: {device.mismatches} launch(es) differ from the reference interpreter", file=sys.stderr)
        return 1
    return status
