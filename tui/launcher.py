"""Run one launch for the dashboard, off the UI thread, cancellably.

:func:`execute_launch` adapts the dashboard's :class:`RunRequest` to the launch runtime
(``qwengpu_mlx.runtime.launch``: compile, bind, the store's circuit, the launch,
the check) and turns every failure into a :class:`LaunchOutcome`, so the dashboard
never dies of a launch. It reports to a runtime ``LaunchEvents`` sink (the dashboard's:
``tui.feed.FeedSink``, which queues each event for the screen and never waits for it).

Threads and MLX: MLX streams belong to the thread that made them, and an array
evaluated later carries the stream of the thread that built it: a lazy array made on one
thread fails on another ("There is no Stream(cpu, 1) in current thread"). The chat keeps
such arrays from turn to turn (its prompt cache: after a turn, Gated DeltaNet's conv state
is a lazy slice nothing has asked for yet), and so may the circuit store. On the CPU build
a thread that used MLX must also call ``mx.clear_streams()`` before it ends, or the
process can abort at exit, and Textual's thread workers run in a reused pool. So every
piece of the dashboard's MLX work, launches and chat turns alike, runs on one long-lived
thread (:class:`MlxThread`): a Textual thread worker hands it the work and waits (the UI
thread never does), and the thread clears its streams when the dashboard closes it, or
when the interpreter shuts down without that. A /run's launch itself runs in the launch
process (``launch_process``: the screen and the launch never share a GIL), driven from this
thread; a chat turn's launches run on it.

Cancelling: the caller sets a :class:`threading.Event`; the runtime stops at the next
token and raises ``LaunchCancelled``, caught here.
"""

from __future__ import annotations

import queue
import re
import threading
from dataclasses import dataclass, field
from typing import Callable

import mlx.core as mx

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig
from qwengpu_mlx.core.errors import LaunchError, QwenGpuError
from qwengpu_mlx.host.frontend import demangle_kernel_name
from qwengpu_mlx.runtime import CircuitStore, LaunchCancelled, LaunchEvents, LaunchRequest, compile_request, launch

from qwengpu_mlx.tui.commands import JobEnd, RunRequest


@dataclass
class LaunchOutcome(JobEnd):
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


class MlxThread:
    """One thread that runs every piece of MLX work handed to it, in order, until closed.

    :meth:`call` runs a function there and waits for its result (or re-raises its
    exception in the caller). The thread starts with the first call and ends after
    :meth:`close` (or once the main thread has ended: interpreter shutdown), calling
    ``mx.clear_streams()`` last."""

    POLL_S = 1.0  # how often an idle thread checks that the main thread is still there

    def __init__(self, name: str = "qwengpu-mlx"):
        self.name = name
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def ident(self) -> int | None:
        """The thread's id once started (tests check where work ran)."""
        return self._thread.ident if self._thread is not None else None

    def call(self, fn: Callable, *args, **kwargs):
        """``fn(*args, **kwargs)`` on the MLX thread; blocks until it returns."""
        done, box = threading.Event(), {}
        with self._lock:
            if self._closed:
                raise RuntimeError("the MLX thread is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=False)
                self._thread.start()
            self._jobs.put((fn, args, kwargs, box, done))
        done.wait()
        if "error" in box:
            raise box["error"]
        return box.get("result")

    def close(self, timeout: float | None = 0.0) -> bool:
        """No more work: the thread ends once what it runs now returns. Waits up to ``timeout``
        seconds for that (None: as long as it takes); True when the thread has ended."""
        with self._lock:
            if not self._closed and self._thread is not None:
                self._jobs.put(None)
            self._closed = True
            thread = self._thread
        if thread is None:
            return True
        if thread is not threading.current_thread() and timeout != 0.0:
            thread.join(timeout)
        return not thread.is_alive()

    def _loop(self) -> None:
        try:
            while True:
                try:
                    job = self._jobs.get(timeout=self.POLL_S)
                except queue.Empty:
                    if not threading.main_thread().is_alive():  # shutting down without close()
                        return
                    continue
                if job is None:
                    return
                fn, args, kwargs, box, done = job
                try:
                    box["result"] = fn(*args, **kwargs)
                except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                    box["error"] = e
                finally:
                    del fn, args, kwargs, job  # nothing of the job outlives it on this thread
                    done.set()
        finally:
            try:
                mx.clear_streams()
            except Exception:  # pragma: no cover - nothing to clear
                pass


def _example(param) -> str:
    return f"{param.name}=1,2,3" if param.pointer else f"{param.name}=3"


def check_complete(req: RunRequest, request: LaunchRequest) -> None:
    """Refuse a /run with parameters left unset, in the dashboard's syntax (``NAME=values``;
    the binder's own message names the command line's ``--arg``). Compiles the kernel (the
    launch then reuses it)."""
    ck = compile_request(request)
    missing = [p for p in ck.params if p.name not in req.args]
    if not missing:
        return
    names = [p.name for p in ck.params]
    msg = [f"kernel `{demangle_kernel_name(ck.kernel.name)}` takes parameters ({', '.join(names)})",
           "missing " + ", ".join(p.name for p in missing)]
    extra = [n for n in req.args if n not in names]
    if extra:
        msg.append("no parameter named " + ", ".join(extra))
    example = " ".join([f"/run {req.describe()}"] + [_example(p) for p in missing])  # a line that runs
    hint = f"e.g. {example}"
    if req.source.with_suffix(".json").is_file():
        hint += f" (or /run {req.source.stem} for its .json arguments)"
    raise LaunchError("; ".join(msg) + "; " + hint)


def _dashboard_syntax(message: str) -> str:
    """The binder's ``--arg NAME`` as the dashboard spells an argument: ``NAME``."""
    return re.sub(r"--arg (\w+)", r"\1", message)


def execute_launch(req: RunRequest, events: LaunchEvents, cancel: threading.Event, *, check: bool,
                   store: CircuitStore, machine: MachineConfig = DEFAULT_MACHINE,
                   step_budget: int | None = None) -> LaunchOutcome:
    """One launch through the runtime, reporting to ``events``. Call on the MLX thread
    (:meth:`MlxThread.call`)."""
    out = LaunchOutcome(req)
    request = LaunchRequest(req.source, req.args, kernel=req.kernel, block=req.block, grid=req.grid,
                            shared=req.shared, machine=machine, check=check, step_budget=step_budget)
    try:
        check_complete(req, request)
        result = launch(request, store=store, events=events, cancel=cancel)
        out.launch, out.program = result, result.program
        out.tokens = len(result.tokens)
        out.seconds = result.seconds
        out.outputs = result.outputs
        out.build_seconds = result.build_seconds
        if check:
            out.problems = result.check.problems
    except LaunchCancelled:
        out.cancelled = True
    except LaunchError as e:
        out.error = _dashboard_syntax(str(e))
    except QwenGpuError as e:
        out.error = str(e)
    except Exception as e:  # a bug or an unexpected failure: show it, keep the dashboard alive
        out.error = f"{type(e).__name__}: {e}"
    return out
