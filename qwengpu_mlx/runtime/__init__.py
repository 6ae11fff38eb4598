"""The launch runtime: where every launch happens (CLI, dashboard, chat, probes, benches).

* ``launch``: :func:`launch` (a :class:`LaunchRequest` -> a :class:`Launch`), the one
  entry; :func:`bind_request`, the one place a kernel is compiled and bound;
* ``generate``: the launch loop on a runner, streamed, cancellable;
* ``runner``: the :class:`Runner` interface a model implements;
* ``store``: :class:`CircuitStore`, circuits and runners per machine (cache behind it);
* ``expect`` and ``check``: the complete launch the reference implies, and the check.
"""

from qwengpu_mlx.runtime.check import CheckReport, Mismatch, check_launch
from qwengpu_mlx.runtime.generate import Launch, LaunchCancelled
from qwengpu_mlx.runtime.launch import (LaunchEvents, LaunchRequest, QuietEvents, bind_request, compile_request,
                                        launch)
from qwengpu_mlx.runtime.prompt import prompt_tokens
from qwengpu_mlx.runtime.runner import Runner
from qwengpu_mlx.runtime.store import CircuitStore

__all__ = ["CheckReport", "CircuitStore", "Launch", "LaunchCancelled", "LaunchEvents", "LaunchRequest", "Mismatch",
           "QuietEvents", "Runner", "bind_request", "check_launch", "compile_request", "launch", "prompt_tokens"]
