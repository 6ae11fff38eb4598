"""Run one launch for the dashboard, off the UI thread, cancellably.

:func:`execute_launch` adapts the dashboard's :class:`RunRequest` to the launch runtime
(``qwengpu_mlx.runtime.launch``: compile, bind, the store's circuit, the launch,
the check) and turns every failure into a :class:`LaunchOutcome`, so the dashboard
never dies of a launch. It reports through a :class:`LaunchSink` (the dashboard wraps
each callback in ``App.call_from_thread``).

Threads and MLX: on the CPU build a thread that used MLX must call
``mx.clear_streams()`` before it ends, or the process can abort at exit. After that
call the same thread cannot use MLX again ("There is no Stream(cpu, 0) in current
thread"), and Textual's thread workers run in a reused executor pool. So every piece
of MLX work runs on its own short-lived thread (:func:`run_in_mlx_thread`), started
and joined by the Textual worker, that clears its streams in a ``finally``.

Cancelling: the caller sets a :class:`threading.Event`; the runtime stops at the next
token and raises ``LaunchCancelled``, caught here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Protocol

import mlx.core as mx

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig
from qwengpu_mlx.core.errors import QwenGpuError
from qwengpu_mlx.runtime import CircuitStore, LaunchCancelled, LaunchEvents, LaunchRequest, launch

from qwengpu_mlx.tui.commands import RunRequest


class LaunchSink(Protocol):
    def phase(self, text: str) -> None: ...

    def begin(self, request: RunRequest, program, prompt: list[int]) -> None: ...

    def token(self, token_id: int, tok) -> None: ...


@dataclass
class LaunchOutcome:
    request: RunRequest
    program: object = None
    launch: object = None  # runtime.Launch
    outputs: dict = field(default_factory=dict)
    problems: list[str] | None = None  # None: not checked
    error: str | None = None
    cancelled: bool = False
    tokens: int = 0
    seconds: float = 0.0  # prefill and generation
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
                mx.clear_streams()
            except Exception:  # pragma: no cover - nothing to clear
                pass

    t = threading.Thread(target=body, name=name, daemon=False)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box.get("result")


class _Events(LaunchEvents):
    """The runtime's events, forwarded to the dashboard's sink (with the request)."""

    def __init__(self, req: RunRequest, sink: LaunchSink, out: "LaunchOutcome"):
        self.req, self.sink, self.out = req, sink, out

    def phase(self, text: str) -> None:
        self.sink.phase(text)

    def begin(self, program, prompt: list[int]) -> None:
        self.out.program = program
        self.sink.begin(self.req, program, prompt)

    def token(self, token_id: int, tok) -> None:
        self.sink.token(token_id, tok)


def execute_launch(req: RunRequest, sink: LaunchSink, cancel: threading.Event, *, check: bool,
                   store: CircuitStore, machine: MachineConfig = DEFAULT_MACHINE,
                   step_budget: int | None = None) -> LaunchOutcome:
    """One launch through the runtime. Call on an MLX thread (see :func:`run_in_mlx_thread`)."""
    out = LaunchOutcome(req)
    request = LaunchRequest(req.source, req.args, kernel=req.kernel, block=req.block, grid=req.grid,
                            machine=machine, check=check, step_budget=step_budget)
    try:
        result = launch(request, store=store, events=_Events(req, sink, out), cancel=cancel)
        out.launch = result
        out.tokens = len(result.tokens)
        out.seconds = result.seconds
        out.outputs = result.outputs
        out.build_seconds = result.build_seconds
        if check:
            out.problems = result.check.problems
    except LaunchCancelled:
        out.cancelled = True
    except QwenGpuError as e:
        out.error = str(e)
    except Exception as e:  # a bug or an unexpected failure: show it, keep the dashboard alive
        out.error = f"{type(e).__name__}: {e}"
    return out
