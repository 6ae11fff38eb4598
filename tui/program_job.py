"""A /run of a whole CUDA program (a ``.cu`` file with ``main()``), in the dashboard's launch process.

The program is built and run as ``qwengpu-mlx run prog.cu -- ARGS`` runs it
(``runtime.program_run``: the kernels to PTX, the host code natively, the program a
child process whose CUDA runtime hands each launch to a ``ProgramDevice`` here), with
three differences the screen needs:

* its stdout is a pseudo-terminal and its stderr a pipe, read here line by line and
  reported as they come (a terminal, so the C library flushes each line as it does in a
  shell: the lines and the launches interleave on the screen as they happened), and the
  device's own messages (a kernel's fault, a check's mismatch), which the command line
  writes to stderr, are reported as stderr lines too;
* each launch's progress goes to the launch process's event sink (its tokens stream into
  the launch pane) and its summary record is reported as it ends;
* ``cancel`` stops it: the launch under way at its next token, the child at once.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import sys
import tempfile
import threading
import time
import tty
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from qwengpu_mlx.core.errors import QwenGpuError
from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.host.program_build import build_host, compile_device
from qwengpu_mlx.runtime import LaunchCancelled, LaunchEvents
from qwengpu_mlx.runtime.program import LaunchRecord, ProgramDevice
from qwengpu_mlx.runtime.program_process import run_program

from qwengpu_mlx.tui.commands import JobEnd, ProgramRequest

Report = Callable[..., None]  # report("output", stream, line) / report("record", LaunchRecord)


@dataclass
class ProgramOutcome(JobEnd):
    """How a program's /run ended: its exit status, or why it did not run to its end."""

    request: ProgramRequest
    exit_status: int | None = None
    records: list[LaunchRecord] = field(default_factory=list)
    error: str | None = None  # it did not build, or a kernel was refused
    cancelled: bool = False
    seconds: float = 0.0

    @property
    def mismatches(self) -> int:
        return sum(1 for r in self.records if r.exact is False)


class StopOnCancel(LaunchEvents):
    """The launch process's sink for one program's launches, stopping the launch under way at its
    next token once ``cancel`` is set (a program's launches take no cancel of their own)."""

    def __init__(self, inner: LaunchEvents, cancel):
        self.inner, self.cancel = inner, cancel

    def _stop_if_cancelled(self) -> None:
        if self.cancel.is_set():
            raise LaunchCancelled()

    def phase(self, text: str) -> None:
        self.inner.phase(text)

    def begin(self, program, prompt: list[int]) -> None:
        self._stop_if_cancelled()
        self.inner.begin(program, prompt)

    def token(self, token_id: int, tok) -> None:
        self._stop_if_cancelled()
        self.inner.token(token_id, tok)


class LineReporter:
    """Text in pieces (bytes from a pipe, or ``print``'s strings) -> one report per complete line."""

    def __init__(self, report: Report, stream: str):
        self.report, self.stream = report, stream
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._lock = threading.Lock()
        self._held = ""

    def feed(self, data: bytes | str) -> None:
        text = data if isinstance(data, str) else self._decoder.decode(data)
        with self._lock:
            *lines, self._held = (self._held + text).split("\n")
        for line in lines:
            self.report("output", self.stream, line)

    def close(self) -> None:
        with self._lock:
            rest, self._held = self._held + self._decoder.decode(b"", final=True), ""
        if rest:
            self.report("output", self.stream, rest)

    # as a text file (``print(..., file=...)``)
    def write(self, text: str) -> int:
        self.feed(text)
        return len(text)

    def flush(self) -> None:
        pass


def _read_all(fd: int, lines: LineReporter) -> None:
    """A reader thread's body: everything from ``fd`` until its writers are gone (a pty's
    master reads EIO then, a pipe end-of-file)."""
    try:
        while data := os.read(fd, 4096):
            lines.feed(data)
    except OSError:
        pass
    lines.close()


@contextlib.contextmanager
def captured_output(report: Report):
    """``(stdout, stderr)`` file descriptors for the child (a pseudo-terminal, a pipe), read and
    reported line by line; ``sys.stderr`` reported as the program's stderr meanwhile. On exit
    every line written has been reported."""
    out_master, out_slave = os.openpty()
    tty.setraw(out_slave)  # no "\r\n" for "\n", no echo: the bytes the program wrote
    err_read, err_write = os.pipe()
    stdout, stderr = LineReporter(report, "stdout"), LineReporter(report, "stderr")
    readers = [threading.Thread(target=_read_all, args=(fd, lines), name=f"program-{lines.stream}", daemon=True)
               for fd, lines in ((out_master, stdout), (err_read, stderr))]
    for r in readers:
        r.start()
    saved, sys.stderr = sys.stderr, stderr
    try:
        yield out_slave, err_write
    finally:
        sys.stderr = saved
        os.close(out_slave)
        os.close(err_write)
        for r in readers:
            r.join()
        os.close(out_master)
        os.close(err_read)


def execute_program(req: ProgramRequest, events: LaunchEvents, report: Report, cancel, *, check: bool,
                    store) -> ProgramOutcome:
    """Build and run the program, each launch on the model (checked with ``check``); every failure
    becomes the outcome's ``error``, so the dashboard never dies of a program."""
    out = ProgramOutcome(req)
    t0 = time.perf_counter()

    def launched(record: LaunchRecord) -> None:
        out.records.append(record)
        report("record", record)

    try:
        events.phase(f"compiling {req.source.name}")
        code = compile_device(req.source)
        device = ProgramDevice(code, MACHINES[req.machine], backend="model", check=check, store=store,
                               on_launch=launched, events=StopOnCancel(events, cancel))
        with tempfile.TemporaryDirectory(prefix="qwengpu-program-") as tmp:
            executable = build_host(req.source, Path(tmp))
            events.phase("running")
            with captured_output(report) as (stdout, stderr):
                out.exit_status = run_program(executable, req.args, device, stdout=stdout, stderr=stderr,
                                              cancel=cancel)
    except LaunchCancelled:
        out.cancelled = True
    except QwenGpuError as e:
        out.error = str(e)
    except Exception as e:  # a bug or an unexpected failure: shown, the dashboard stays alive
        out.error = f"{type(e).__name__}: {e}"
    out.cancelled = out.cancelled or cancel.is_set()
    out.seconds = time.perf_counter() - t0
    return out


def _dims(d) -> str:
    """``4`` for a 1-D shape, ``(2, 2)`` otherwise: a ``dim3`` as a program writes it."""
    d = tuple(d)
    while len(d) > 1 and d[-1] == 1:
        d = d[:-1]
    return str(d[0]) if len(d) == 1 else "(" + ", ".join(map(str, d)) + ")"


def record_line(record: LaunchRecord, show_timing: bool = True) -> str:
    """One launch of a program as the screen says it: ``launch 1: k<<<2, 4>>>: 6 steps, 69 tokens,
    391.1 tokens/s, exact`` (without tokens/s when timing is hidden)."""
    shape = f"<<<{_dims(record.grid)}, {_dims(record.block)}" + (f", {record.shared}" if record.shared else "")
    head = f"launch {record.index}: {record.kernel}{shape}>>>"
    if record.failure:
        return f"{head}: stopped ({record.failure})"
    parts = [f"{record.steps} steps", f"{record.tokens} tokens"]
    if show_timing:
        parts.append(f"{record.tokens_per_s:.1f} tokens/s")
    if record.exact is not None:
        parts.append("exact" if record.exact else "MISMATCH")
    return f"{head}: " + ", ".join(parts)
