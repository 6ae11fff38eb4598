"""The launch runtime: where every launch happens (CLI, dashboard, benches, chat).

* ``launch``: :class:`LaunchRequest` -> :func:`launch_kernel` (compile, bind, run, check),
  :func:`launch_program` for a bound program, :func:`run_reference` for the interpreter;
* ``generate``: :func:`run_launch`, one launch on a runner, streamed, cancellable;
* ``runner``: the :class:`Runner` interface a model implements;
* ``store``: :class:`CircuitStore`, circuits and runners per machine (cache behind it);
* ``expect`` and ``check``: the complete launch the reference implies, and the check.
"""

from qwengpu_mlx.runtime.check import CheckReport, Mismatch, check_launch
from qwengpu_mlx.runtime.generate import Launch, LaunchCancelled, run_launch
from qwengpu_mlx.runtime.launch import (LaunchEvents, LaunchRequest, Prepared, QuietEvents, ReferenceLaunch, launch_kernel,
                     launch_program, prepare, run_reference)
from qwengpu_mlx.runtime.prompt import prompt_tokens
from qwengpu_mlx.core.readout import read_memory
from qwengpu_mlx.runtime.runner import Runner
from qwengpu_mlx.runtime.store import CircuitStore

__all__ = ["CheckReport", "CircuitStore", "Launch", "LaunchCancelled", "LaunchEvents", "LaunchRequest", "Mismatch",
           "Prepared", "QuietEvents", "ReferenceLaunch", "Runner", "check_launch",
           "launch_kernel", "launch_program", "prepare", "prompt_tokens", "read_memory", "run_launch",
           "run_reference"]
