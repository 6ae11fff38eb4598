"""Running a compiled CUDA program as a child process, its device served from here.

The program's stdin, stdout and stderr are the user's; two pipes carry its CUDA
runtime's requests and this process's replies (``host.program_protocol``), their fds
named in the child's environment. One request is answered before the next is read, so
the program's launches run one at a time, in its order, and each has ended when its
``cudaLaunchKernel`` returns (a stream's order, with nothing overlapped).

The command's exit status is the program's; a program killed by a signal is named
(``Segmentation fault``) and ends the command with 128 + the signal, as a shell
reports it. Whatever stops this side first (a refused kernel, Ctrl-C) kills the child
before it propagates, so nothing is left running.

A caller that shows the program elsewhere (the dashboard) gives its stdout and stderr
(file descriptors) and a ``cancel`` (anything with ``is_set``): once set, the child is
killed, whatever it is doing, host code included.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from qwengpu_mlx.host.program_protocol import FDS_VARIABLE, ProgramGone, read_request, write_reply
from qwengpu_mlx.runtime.program import ProgramDevice

CANCEL_POLL_S = 0.05  # how often a cancellable run looks at its cancel


def signal_name(number: int) -> str:
    try:
        sig = signal.Signals(number)
        return f"{sig.name} ({signal.strsignal(sig) or sig.name})"
    except ValueError:
        return f"signal {number}"


def _serve(device: ProgramDevice, requests: int, replies: int) -> None:
    """Answer requests until the program closes its end (it exited)."""
    while True:
        try:
            req = read_request(requests)
        except ProgramGone:
            return
        status, payload = device.answer(req.op, req.payload)
        try:
            write_reply(replies, status, payload)
        except BrokenPipeError:  # the program died while we answered
            return


def _kill_on_cancel(child: subprocess.Popen, cancel) -> None:
    """A watcher thread's body: the child killed as soon as ``cancel`` is set, or nothing once it ended."""
    while child.poll() is None:
        if cancel.is_set():
            child.kill()
            return
        time.sleep(CANCEL_POLL_S)


def run_program(executable: Path, args: list[str], device: ProgramDevice, *, stdout=None, stderr=None,
                cancel=None) -> int:
    """Run the program with ``args``; its exit status (128 + N when signal N killed it).
    ``stdout``/``stderr``: where its output goes (None: this process's)."""
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    env = {**os.environ, FDS_VARIABLE: f"{to_child_r},{from_child_w}"}
    sys.stdout.flush()
    sys.stderr.flush()
    child = subprocess.Popen([str(executable), *args], env=env, pass_fds=(to_child_r, from_child_w),
                             stdout=stdout, stderr=stderr)
    os.close(to_child_r)
    os.close(from_child_w)
    if cancel is not None:
        threading.Thread(target=_kill_on_cancel, args=(child, cancel), name="program-cancel", daemon=True).start()
    try:
        _serve(device, from_child_r, to_child_w)
        code = child.wait()
    except BaseException:
        child.kill()
        child.wait()
        raise
    finally:
        os.close(from_child_r)
        os.close(to_child_w)
    if code < 0:
        print(f"error: the program was killed by {signal_name(-code)}", file=sys.stderr)
        return 128 - code
    return code
