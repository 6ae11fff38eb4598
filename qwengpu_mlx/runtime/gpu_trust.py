"""Which Gated DeltaNet recurrence a launch runs on: a GPU kernel only after it proved itself.

The MLX-ops recurrence (``recurrent.gated_delta_ops``) is the tested reference; it runs
on every device. On Apple silicon a Metal kernel is much faster, and the one we use is
mlx-lm's maintained ``gated_delta_kernel``. Kernels of this kind have shipped bugs
(state written in bf16, per-head gates read wrongly), and none has run on this
project's CI, so a kernel is trusted per (device, mlx, mlx-lm) only after a **probe
launch**: the dot product run on the circuit with the kernel, with the ops path, and on
the reference interpreter. The kernel is trusted when its launch writes the ops path's
tokens and the memory the reference computes. The verdict is cached next to the circuit
cache, so the probe runs once per device and version.

A kernel that fails the probe is never used: the process switches to the ops path on
the CPU (``mx.set_default_device(mx.cpu)``) and says so in one line.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import asdict, dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable

import mlx.core as mx

from qwengpu_mlx.runtime.circuit_cache import cache_dir, write_atomically
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner
from qwengpu_mlx.runtime.generate import LaunchCancelled
from qwengpu_mlx.runtime.launch import LaunchEvents, LaunchRequest, launch
from qwengpu_mlx.runtime.probe import probe_program
from qwengpu_mlx.runtime.recurrent import Recurrence, gated_delta_ops

VERDICTS_FILE = "gpu-trust.json"


@dataclass
class Verdict:
    key: str  # device and versions the probe ran on
    trusted: bool
    detail: str  # what the probe found


def mlx_lm_kernel() -> Recurrence | None:
    """mlx-lm's Metal recurrence when this process runs on a Metal GPU, else None."""
    if not (mx.metal.is_available() and mx.default_device() == mx.gpu):
        return None
    # lazy: only on a Metal GPU (importing mlx_lm costs seconds of start-up: recurrent._mlx_lm)
    from mlx_lm.models.gated_delta import gated_delta_kernel

    return gated_delta_kernel


def device_key(kernel_name: str) -> str:
    """The device and software a verdict holds for: a new one of either probes again."""
    device = str(mx.default_device())
    if mx.metal.is_available():
        device += " " + str(mx.metal.device_info().get("device_name", "metal"))
    return f"{kernel_name} on {device}; mlx {_version('mlx')}; mlx-lm {_version('mlx-lm')}"


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "none"


def _verdicts_path(directory: Path | None) -> Path:
    return (directory or cache_dir()) / VERDICTS_FILE


def _read_verdicts(path: Path) -> dict:
    """Cached verdicts; an unreadable file is no verdicts (the probe runs again)."""
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_verdict(path: Path, verdict: Verdict) -> None:
    verdicts = _read_verdicts(path)
    verdicts[verdict.key] = asdict(verdict)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, lambda name: Path(name).write_text(json.dumps(verdicts, indent=1)))


def cached_verdict(path: Path, key: str, run_probe: Callable[[], tuple[bool, str]]) -> Verdict:
    """The verdict cached in ``path`` under ``key``, else ``run_probe()``'s, saved."""
    cached = _read_verdicts(path).get(key)
    if isinstance(cached, dict) and isinstance(cached.get("trusted"), bool):
        return Verdict(key, cached["trusted"], str(cached.get("detail", "")))
    verdict = Verdict(key, *run_probe())
    _save_verdict(path, verdict)
    return verdict


def probe(cc, machine, kernel: Recurrence) -> tuple[bool, str]:
    """The probe launch with ``kernel``, with the ops path and on the reference interpreter."""
    return probe_runner(cc, machine, CircuitRunner(cc, machine, recurrence=kernel))


class _Compare(LaunchEvents):
    """Hears the candidate's tokens; sets ``differs`` at the first one the ops path did not write."""

    def __init__(self, expected: list[int]):
        self.expected, self.written, self.differs = expected, [], threading.Event()

    def token(self, token_id: int, tok) -> None:
        self.written.append(token_id)
        n = len(self.written)
        if n > len(self.expected) or self.expected[n - 1] != token_id:
            self.differs.set()


def probe_runner(cc, machine, candidate) -> tuple[bool, str]:
    """The probe launch on the ``candidate`` runner, on the MLX-ops runner and on the
    reference interpreter: trusted when the candidate writes the ops path's tokens and
    both leave the reference's memory.

    The candidate's launch is stopped at its first token that differs from the ops path's
    (a wrong launch could otherwise run to its step budget)."""
    request = LaunchRequest(program=probe_program(machine), machine=machine)
    want = launch(replace(request, backend="reference")).memory
    ops = launch(request, runner=CircuitRunner(cc, machine))
    compare = _Compare(ops.tokens)
    try:
        tried = launch(request, runner=candidate, events=compare, cancel=compare.differs)
    except LaunchCancelled:
        return False, f"its probe launch wrote another token than the ops path at token {len(compare.written)}"
    except Exception as err:  # a broken path may fail any way at all: that is the verdict
        return False, f"the probe launch failed ({type(err).__name__}: {err})"
    if tried.tokens != ops.tokens:
        return False, f"its probe launch ended after {len(tried.tokens)} tokens, the ops path's after {len(ops.tokens)}"
    if tried.memory != want or ops.memory != want:
        return False, "its probe launch's memory differs from the reference interpreter's"
    return True, f"probe launch: {len(tried.tokens)} tokens identical to the ops path, memory exact"


def choose_recurrence(cc, machine, *, kernel: Recurrence | None = None, kernel_name: str = "mlx-lm gated_delta_kernel",
                      directory: Path | None = None, warn: Callable[[str], None] | None = None) -> Recurrence:
    """The recurrence launches on ``cc`` should use: ``kernel`` (default: mlx-lm's, on a
    Metal GPU) once it passed the probe here, else the ops path."""
    kernel = kernel or mlx_lm_kernel()
    if kernel is None:
        return gated_delta_ops
    verdict = cached_verdict(_verdicts_path(directory), device_key(kernel_name), lambda: probe(cc, machine, kernel))
    if verdict.trusted:
        return kernel
    (warn or _stderr)(f"warning: not using the GPU recurrence ({kernel_name}): {verdict.detail}; "
                      "this process runs the MLX-ops path on the CPU")
    mx.set_default_device(mx.cpu)
    return gated_delta_ops


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)
