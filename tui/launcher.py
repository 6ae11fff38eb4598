"""Run one launch on the embedded circuit, off the UI thread, cancellably.

:func:`execute_launch` compiles and binds the kernel, builds the circuit (once per
process, ``runner_for`` caches it), runs ``run_model`` and optionally replays the
launch against the reference interpreter. It reports through a :class:`LaunchSink`
(the dashboard wraps each callback in ``App.call_from_thread``).

Threads and MLX: on the CPU build a thread that used MLX must call
``mx.clear_streams()`` before it ends, or the process can abort at exit. After that
call the same thread cannot use MLX again ("There is no Stream(cpu, 0) in current
thread"), and Textual's thread workers run in a reused executor pool. So every piece
of MLX work runs on its own short-lived thread (:func:`run_in_mlx_thread`), started
and joined by the Textual worker, that clears its streams in a ``finally``.

Cancelling: the caller sets a :class:`threading.Event`; the ``on_token`` callback
raises the private :class:`_Cancelled` at the next token, which unwinds ``run_model``
and is caught here.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

from qwengpu_mlx.machine import DEFAULT_MACHINE, MachineConfig

from .commands import RunRequest


class _Cancelled(Exception):
    """Raised inside ``on_token`` to stop a running launch."""


class LaunchSink(Protocol):
    def phase(self, text: str) -> None: ...

    def begin(self, request: RunRequest, program, prompt: list[int]) -> None: ...

    def token(self, token_id: int, tok) -> None: ...


@dataclass
class LaunchOutcome:
    request: RunRequest
    program: object = None
    launch: object = None  # ModelLaunch
    outputs: dict = field(default_factory=dict)
    problems: list[str] | None = None  # None: not checked
    error: str | None = None
    cancelled: bool = False
    tokens: int = 0
    seconds: float = 0.0  # generation (prefill included), as ModelLaunch.seconds
    build_seconds: float = 0.0  # circuit build, 0 when cached

    @property
    def status(self) -> str:
        if self.cancelled:
            return "cancelled"
        if self.error:
            return "error"
        return "done"


def run_in_mlx_thread(fn: Callable, *args, name: str = "qwengpu-mlx-work", **kwargs):
    """Run ``fn`` on a fresh thread that calls ``mx.clear_streams()`` before it ends; wait for it."""
    box: dict = {}

    def body():
        try:
            box["result"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e
        finally:
            try:
                import mlx.core as mx

                mx.clear_streams()
            except Exception:  # pragma: no cover - nothing to clear
                pass

    t = threading.Thread(target=body, name=name, daemon=False)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box.get("result")


def circuit_cached(machine: MachineConfig = DEFAULT_MACHINE) -> bool:
    from qwengpu_mlx.host.model_backend import runner_ready

    return runner_ready(machine)


def execute_launch(req: RunRequest, sink: LaunchSink, cancel: threading.Event, *, check: bool,
                   machine: MachineConfig = DEFAULT_MACHINE, step_budget: int | None = None) -> LaunchOutcome:
    """Compile, bind, run on the circuit, check. Call on an MLX thread (see :func:`run_in_mlx_thread`)."""
    from qwengpu_mlx.errors import QwenGpuError
    from qwengpu_mlx.host.launch import bind, compile_kernel, read_outputs
    from qwengpu_mlx.host.model_backend import check_against_reference, prompt_tokens, run_model, runner_for

    out = LaunchOutcome(req)

    def stop_if_cancelled():
        if cancel.is_set():
            raise _Cancelled()

    try:
        sink.phase(f"compiling {req.source.name}")
        ck = compile_kernel(req.source, req.kernel)
        program = bind(ck, req.args, block=req.block, grid=req.grid, machine=machine)
        out.program = program
        stop_if_cancelled()
        if not circuit_cached(machine):
            sink.phase("building the circuit (first launch only, a few seconds)")
            t0 = time.perf_counter()
            runner_for(machine)
            out.build_seconds = time.perf_counter() - t0
        stop_if_cancelled()
        prompt = prompt_tokens(program, machine)
        sink.begin(req, program, prompt)
        sink.phase(f"prefill: {len(prompt)} prompt tokens")

        def on_token(token_id, tok):
            stop_if_cancelled()
            sink.token(token_id, tok)
            stop_if_cancelled()

        launch = run_model(program, machine, step_budget=step_budget, on_token=on_token)
        out.launch = launch
        out.tokens = len(launch.tokens)
        out.seconds = launch.seconds
        out.outputs = read_outputs(program, launch.memory)
        if check:
            sink.phase("checking against the reference interpreter")
            out.problems = check_against_reference(program, launch, machine)
    except _Cancelled:
        out.cancelled = True
    except QwenGpuError as e:
        out.error = str(e)
    except Exception as e:  # a bug or an unexpected failure: show it, keep the dashboard alive
        out.error = f"{type(e).__name__}: {e}"
    return out
