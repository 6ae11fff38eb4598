"""Whether launches run on the native token step: only after it proved itself here.

The native step (``native_step``, ``native/circuit_step.cpp``) is our own code computing
the circuit's layers, so like a GPU kernel (``gpu_trust``) it is used only after the
**probe launch** ran on it, on the MLX-ops runner and on the reference interpreter,
with the ops path's tokens and the reference's memory. The verdict is cached per build
key (source, MLX, nanobind, Python, platform) beside the built modules. It is for the
CPU: on a Metal GPU, launches keep the GPU path (``gpu_trust``).

A step that fails the probe is never used: launches run on the MLX-ops path, and one
line says so.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import mlx.core as mx

from qwengpu_mlx.runtime import native
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
from qwengpu_mlx.runtime.gpu_trust import VERDICTS_FILE, _verdicts_path, cached_verdict, probe_runner


def choose_native(cc, machine, *, directory: Path | None = None, warn: Callable[[str], None] | None = None,
                  log: Callable[[str], None] | None = None, module=None):
    """The native module launches on ``cc`` should use (built on first use), or None.

    ``directory``: where the verdict is cached (default: beside the built modules, so every
    store of this cache directory shares one probe). ``module``: a stand-in to judge
    instead of the built one (tests inject faulty ones)."""
    if mx.default_device() != mx.cpu:
        return None
    if module is None:
        found = native.load(log)
        if found.module is None:
            if found.just_failed:  # said once: later loads find the failed build's note and stay quiet
                (warn or _stderr)(f"note: launches run on the MLX-ops path: the native circuit step did not "
                                  f"build ({found.reason})")
            return None
        module, key = found.module, found.key
    else:
        key = f"injected {getattr(module, '__name__', type(module).__name__)}"
    verdicts = _verdicts_path(directory) if directory is not None else native.native_dir() / VERDICTS_FILE
    verdict = cached_verdict(verdicts, f"native circuit step {key}",
                             lambda: probe_runner(cc, machine, CircuitRunner(cc, machine, native=module)))
    if verdict.trusted:
        return module
    (warn or _stderr)(f"warning: not using the native circuit step: {verdict.detail}; "
                      "launches run on the MLX-ops path")
    return None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)
