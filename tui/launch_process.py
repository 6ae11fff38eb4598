"""The dashboard's /run launches in a process of their own: the screen and the launch never share a GIL.

Why a process: a launch's loop is Python between MLX steps (the logits read back, the token
chosen, the sink told), a few calls that each take the GIL back after a step. In the
dashboard's one process the UI thread holds the GIL for every frame it draws (Textual's
compositor: tens of milliseconds a frame, about 3 s of CPU over a 701-token launch), so each
return from MLX waited for the frame, up to the interpreter's switch interval each time: the
dashboard ran a launch 1.6-1.8x slower than ``run --check`` though its UI took the launch's
events in batches (``feed``). In a process of its own the launch waits for nobody; the
screen still draws at most ``feed.DELIVERIES_PER_S`` times a second.

Measured by ``bench.dashboard_launch --in-process`` (the CLI, this dashboard and the
dashboard with the launch on its MLX thread, taking turns in one run) on a 2-core machine
shared with five other jobs (load 7-10), ``collatz_steps`` (701 tokens), three runs:
1.34x the CLI's time against 1.74x in-process, 2.22x against 1.88x, 2.08x against 2.18x
(5 launches a side); before any of this (a frame 10 times a second, in-process) 1.67x at
load 1. The process alone, with no screen, runs a launch at the CLI's pace (1.73 s against
1.71 s). What is left is CPU, not the GIL: on 2 oversubscribed cores the screen's frames
and decoding take CPU the launch needs, and the 1.25x target is not met there.
A 24-token launch (``dot``, 0.3 s from the CLI) took 2.6x, drawn (the bench waits for the
screen's redraw with the outcome, and the CLI's printed outputs): its fixed costs were the
screen's, not the pipe's (the key reaches the process in 0.02 s): the footer rebuilt at its
start and end, the whole screen laid out (the transcript's and input's content sizes, the
panes emptied) and redrawn, in frames that each took CPU from the launch. Now a launch's
start draws only the transcript, input and status bar; the panes change at its first
event, batches start one interval after the key, the footer's keys follow a job only after
``jobs.KEYS_AFTER_S``, and a rerun's tables keep their room: 1.9x at load 7-9 in one run
where it had been 2.6x.

:class:`LaunchProcess` is one persistent worker process (``python -m
qwengpu_mlx.tui.launch_process``, started on the first /run and kept for the dashboard's life:
the circuit it loaded stays loaded), serving one launch at a time: ``execute_launch`` there,
its events sent back through a pipe as compact tuples (a token is its id; the screen's side
rebuilds the token from the machine's vocabulary). The caller (a thread worker of the dashboard;
calls take turns) reads the pipe and hands each event to the job's sink, so the
screen sees exactly what an in-process launch shows. A plain subprocess, not
``multiprocessing``'s spawn: spawn runs the parent's main module again in the child, so a
script that opens the dashboard without a ``__main__`` guard would open another in there.
A whole program's /run (a file with ``main()``) runs there too (``program_job``): its output
lines and each launch's record come back as events of their own.

Cancelling: the caller sends ``("cancel", job)`` as soon as the job's event is set (it
polls the pipe at least every :data:`POLL_S`); the worker reads it when the launch next asks
its cancel, at its next token (``runtime.launch`` checks its ``cancel`` there), and the
launch stops; the caller then drains the pipe up to the cancelled job's outcome.

Chat turns' launches stay on the MLX thread: they run on the chat model's own spliced circuit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection

from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.core.vocab import vocab_for
from qwengpu_mlx.runtime import CircuitStore, LaunchCancelled, LaunchEvents

from qwengpu_mlx.tui.commands import ProgramRequest, RunRequest
from qwengpu_mlx.tui.launcher import LaunchOutcome, execute_launch
from qwengpu_mlx.tui.program_job import ProgramOutcome, execute_program

POLL_S = 0.05  # the caller checks the job's cancel event at least this often
TOKENS_EVERY_S = 0.02  # the worker sends the launch's tokens this often (the screen draws at most every 0.1 s)
CLOSE_WAIT_S = 2.0  # how long close() waits for the process to end before killing it


# ---------------------------------------------------------------------------- the worker process
class _Outbox:
    """The worker's pipe to the dashboard; any of its threads may send (a print, a launch event)."""

    def __init__(self, conn: Connection):
        self.conn, self._lock = conn, threading.Lock()

    def send(self, message) -> None:
        with self._lock:
            self.conn.send(message)


class _Inbox:
    """The dashboard's messages to the worker, read on its main thread: the next job between
    jobs (:meth:`next_job`), and during one whatever has come meanwhile each time the job's
    cancel is asked (:class:`_JobCancel`, at each token: a poll of the pipe). Why no thread
    reading it: each launch then started with one more wake-up (the thread, then the main
    thread), and on a loaded machine a wake-up waits its turn for a core."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.cancelled_up_to = 0  # the highest job id cancelled so far
        self.closed = False  # ``None`` came, or the dashboard's end closed
        self._waiting: list = []  # jobs that came while another ran
        self._lock = threading.Lock()  # a program's cancel watcher asks from its own thread

    def _take(self, message) -> None:
        if message is None:
            self.closed = True
        elif message[0] == "cancel":
            self.cancelled_up_to = max(self.cancelled_up_to, message[1])
        else:
            self._waiting.append(message)

    def _receive(self) -> None:
        try:
            self._take(self.conn.recv())
        except (EOFError, OSError):
            self.closed = True

    def drain(self) -> None:
        """Take in every message waiting now, without waiting for more."""
        with self._lock:
            try:
                while not self.closed and self.conn.poll(0):
                    self._receive()
            except (EOFError, OSError):
                self.closed = True

    def next_job(self):
        """The next launch or program message; None once the dashboard has closed the worker."""
        while not self._waiting and not self.closed:
            with self._lock:
                self._receive()
        return self._waiting.pop(0) if self._waiting else None


class _JobCancel:
    """A job's cancel event as ``runtime.launch`` reads it (``is_set``)."""

    def __init__(self, inbox: _Inbox, job: int):
        self.inbox, self.job = inbox, job

    def is_set(self) -> bool:
        self.inbox.drain()
        return self.inbox.cancelled_up_to >= self.job


class _PipeEvents(LaunchEvents):
    """The launch's events, in the worker process, as tuples sent to the dashboard; token ids go
    in batches at most every :data:`TOKENS_EVERY_S` (the dashboard's side wakes for each message,
    and on a loaded machine every wake-up takes CPU from the launch), any other event first
    sending the tokens before it."""

    def __init__(self, outbox: _Outbox):
        self.outbox = outbox
        self._ids: list[int] = []
        self._sent_at = time.monotonic()

    def flush(self) -> None:
        if self._ids:
            self.outbox.send(("tokens", self._ids))
            self._ids = []
        self._sent_at = time.monotonic()

    def phase(self, text: str) -> None:
        self.flush()
        self.outbox.send(("phase", text))

    def begin(self, program, prompt: list[int]) -> None:
        self.flush()
        self.outbox.send(("begin", program, prompt))

    def token(self, token_id: int, tok) -> None:
        self._ids.append(token_id)
        if time.monotonic() - self._sent_at >= TOKENS_EVERY_S:
            self.flush()


class _PipeText:
    """``sys.stdout``/``sys.stderr`` of the worker: a line printed there (a native build's notice)
    reaches the status bar as a note instead of the dashboard's terminal, where it would tear the screen."""

    def __init__(self, outbox: _Outbox):
        self.outbox = outbox

    def write(self, text: str) -> int:
        if text.strip():
            try:
                self.outbox.send(("note", text.strip()))
            except (OSError, ValueError):  # the dashboard is gone
                pass
        return len(text)

    def flush(self) -> None:
        pass


def _program(req: ProgramRequest, events: _PipeEvents, outbox: _Outbox, cancel: _JobCancel, check: bool,
             store: CircuitStore) -> ProgramOutcome:
    """A whole program's run (``program_job``): its output lines and each launch's record sent
    as they come, a record after the launch's last tokens."""
    def report(kind: str, *payload) -> None:
        if kind == "record":
            events.flush()
        outbox.send((kind, *payload))

    return execute_program(req, events, report, cancel, check=check, store=store)


def serve(inbox: Connection, outbox: _Outbox) -> None:
    """The worker: launches and programs as they come, until ``None`` or the dashboard's end of the
    pipe closes."""
    sys.stdout = sys.stderr = _PipeText(outbox)
    store, jobs = CircuitStore(), _Inbox(inbox)
    while (job := jobs.next_job()) is not None:
        kind, job_id, req, check = job
        events, cancel = _PipeEvents(outbox), _JobCancel(jobs, job_id)
        if kind == "program":
            outcome = _program(req, events, outbox, cancel, check, store)
        else:
            outcome = execute_launch(req, events, cancel, check=check, store=store, machine=MACHINES[req.machine])
        events.flush()
        outbox.send(("done", outcome))


# ---------------------------------------------------------------------------- the dashboard's side
def _job_message(req: RunRequest | ProgramRequest, job: int, check: bool) -> tuple:
    return ("program" if isinstance(req, ProgramRequest) else "launch", job, req, check)


def _forward(message: tuple, sink, vocab) -> None:
    """One event from the process, to the job's sink."""
    kind = message[0]
    if kind == "tokens":
        for token_id in message[1]:
            sink.token(token_id, vocab[token_id])
    elif kind == "begin":
        sink.begin(message[1], message[2])
    elif kind == "phase":
        sink.phase(message[1])
    elif kind == "note":
        sink.note(message[1])
    elif kind == "output":
        sink.output(message[1], message[2])
    elif kind == "record":
        sink.record(message[1])


class LaunchProcess:
    """The worker process, started on the first :meth:`run`."""

    runs_elsewhere = True  # no MLX work in the caller's process: any thread may call run()

    def __init__(self):
        self._proc: subprocess.Popen | None = None
        self._to: Connection | None = None
        self._from: Connection | None = None
        self._one_at_a_time = threading.Lock()  # a job cancelled on the screen drains before the next starts
        self._sent_ahead: int | None = None  # the job :meth:`send_ahead` sent, until its run() reads it

    @property
    def pid(self) -> int | None:
        """The worker's process id while it runs (tests check where launches ran)."""
        return self._proc.pid if self._proc is not None else None

    def _start(self) -> None:
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", __spec__.name, str(to_r), str(from_w)],
                                          pass_fds=(to_r, from_w), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL)
        finally:
            os.close(to_r)
            os.close(from_w)
        self._to, self._from = Connection(to_w, readable=False), Connection(from_r, writable=False)

    def run(self, req: RunRequest | ProgramRequest, sink, cancel: threading.Event, job: int, *,
            check: bool) -> LaunchOutcome | ProgramOutcome:
        """Job ``job``'s launch (or whole program) in the process; its events go to ``sink`` (a
        ``LaunchEvents`` with ``note``, and for a program ``output`` and ``record``), until the
        outcome comes back (cancelled when ``cancel`` was set). Threads calling it take turns."""
        with self._one_at_a_time:
            return self._run(req, sink, cancel, job, check)

    def send_ahead(self, req: RunRequest | ProgramRequest, job: int, *, check: bool) -> None:
        """Job ``job`` sent to the process now, from the key press's handler; its :meth:`run` (on
        the job's thread) then only reads its events. Why: the thread starts once the handler has
        returned, and on a loaded machine once the frame echoing the command is drawn, which a
        short launch waited for (the process itself is idle). Only when no other job's thread is
        left (the caller's to know): their turns would read this job's events as theirs."""
        if not self._one_at_a_time.acquire(blocking=False):
            return
        try:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            self._to.send(_job_message(req, job, check))
            self._sent_ahead = job
        except (OSError, ValueError):  # the process is gone: run() starts one and sends the job
            self._sent_ahead = None
        finally:
            self._one_at_a_time.release()

    def _run(self, req: RunRequest | ProgramRequest, sink, cancel: threading.Event, job: int,
             check: bool) -> LaunchOutcome | ProgramOutcome:
        if self._proc is None or self._proc.poll() is not None:
            self._start()
            self._sent_ahead = None
        proc, to, from_ = self._proc, self._to, self._from  # close() may drop them meanwhile
        vocab = vocab_for(MACHINES[req.machine])
        kind = "program" if isinstance(req, ProgramRequest) else "launch"
        try:
            if self._sent_ahead != job:
                to.send(_job_message(req, job, check))
            self._sent_ahead = None
            while self._wait(proc, to, from_, cancel, job):
                message = from_.recv()
                if message[0] == "done":
                    return message[1]
                if not cancel.is_set():  # once cancelled, nothing more is shown: the outcome to come says so
                    try:
                        _forward(message, sink, vocab)
                    except LaunchCancelled:  # the sink saw the cancel first; the pipe is drained all the same
                        pass
        except (EOFError, OSError):
            pass
        if self._proc is proc:
            self._proc = None
        ended = f"the launch process ended (exit code {proc.poll()})"
        return ProgramOutcome(req, error=ended) if kind == "program" else LaunchOutcome(req, error=ended)

    @staticmethod
    def _wait(proc, to: Connection, from_: Connection, cancel: threading.Event, job: int) -> bool:
        """Until a message is waiting (True) or the process has ended (False); a set ``cancel``
        reaches the process meanwhile, once."""
        told = False
        while True:
            if cancel.is_set() and not told:
                to.send(("cancel", job))
                told = True
            if from_.poll(POLL_S):
                return True
            if proc.poll() is not None:
                return from_.poll(0)

    def close(self) -> None:
        """End the process (it finishes the launch it runs first: cancel that before)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            self._to.send(None)
        except (OSError, ValueError):
            pass
        try:
            proc.wait(CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(CLOSE_WAIT_S)
        self._to.close()
        self._from.close()


if __name__ == "__main__":  # the worker: python -m qwengpu_mlx.tui.launch_process INBOX_FD OUTBOX_FD
    serve(Connection(int(sys.argv[1]), writable=False), _Outbox(Connection(int(sys.argv[2]), readable=False)))
