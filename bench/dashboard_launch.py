"""The dashboard's launch against the command line's, the same launch, as a ratio.

    .venv/bin/python -m bench.dashboard_launch [KERNEL ...] [--repeat 3] [--machine NAME] [--in-process]

Both sides run in this one process, taking turns launch by launch (the machine is shared
and noisy: both meet the same load), after one launch each to warm up (the circuit's
cache read, clang):

Each side is timed as its user waits for the launch, from the command to its result on
the screen:

* ``cli``: ``runtime.launch`` on the calling thread with the command line's progress
  sink (``cli.progress.Display`` on a terminal console), as ``qwengpu-mlx run K --check``,
  until its outputs are printed (the circuit already loaded and clang's PTX cached, as in
  the dashboard: what both share is left out alike);
* ``dashboard``: ``/run K`` typed into the dashboard (``tui.app.DashboardApp``, headless
  under Textual's pilot), timed from the key press until the end of the frame that drew the
  outcome (:func:`drawn`: nothing the screen was told to show still waits to be drawn): the
  launch, every token decoded into the launch and machine panes, the status bar, the check.
  The key reaches the app as a terminal's does (:func:`press_enter`; before, Textual's
  ``pilot.press`` also waited for the screen to go idle, posting a message to every widget: its
  CPU counted as the dashboard's). The line is put into the input and drawn before the key press, as a user's typed line is
  (before, the clock started with that frame still to draw, and the launch began after it),
  and the screen done with what the launch before left for after its outcome (the footer's keys
  after a long launch: before, that layout was timed as the next launch's).
  The launch runs in the dashboard's launch process (``tui.launch_process``). Textual's
  ``wait_for_refresh``, used before, often returned before that frame (the widgets' repaints
  reach the screen as messages after it goes idle), and then left the final frame out;
* ``in-process`` (with ``--in-process``): the same dashboard with the launch on its MLX
  thread, as before the launch process (the screen and the launch sharing one GIL).

``--machine NAME``: both sides launch on that machine (``/run K --machine NAME`` typed into
the dashboard, ``LaunchRequest(machine=...)`` for the CLI); without it each kernel runs on the
machine its launch file names, else the default, on both sides alike.

Printed per kernel: its tokens, the median wall time of each side, the dashboard's ratio to
the CLI (its target: at most 1.25), each side's generation tokens/s, the median CPU seconds
each side spent (the dashboard's: its screen's process and the launch process, from /proc; "-"
where there is none), and of those the screen's process alone: on a machine whose cores are
all busy the wall-time ratio tends to the CPU ratio, on an idle one the screen draws on a core
of its own beside the launch.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import time
from pathlib import Path

from rich.console import Console
from textual import events

from qwengpu_mlx.cli.progress import Display
from qwengpu_mlx.core.float32 import outputs_text
from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.runtime import CircuitStore, LaunchRequest, launch
from qwengpu_mlx.tui.app import DashboardApp
from qwengpu_mlx.tui.chat import NoChat
from qwengpu_mlx.tui.commands import CommandError, parse
from qwengpu_mlx.tui.launcher import execute_launch

KERNELS = ("dot", "collatz_steps")
SIZE = (160, 48)


def process_cpu(pid: int | None) -> float | None:
    """CPU seconds (user and system) process ``pid`` has used so far; None without /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def command(name: str, machine: str | None) -> str:
    """The dashboard's line for kernel ``name`` (on ``machine`` when given)."""
    return f"/run {name}" + (f" --machine {machine}" if machine else "")


def cli_launch(name: str, store: CircuitStore, machine: str | None = None) -> tuple:
    """(wall seconds, generation tokens/s, tokens, CPU seconds, None) of ``run NAME --check`` in-process."""
    req = parse(command(name, machine)).run
    request = LaunchRequest(req.source, req.args, kernel=req.kernel, block=req.block, grid=req.grid,
                            shared=req.shared, machine=MACHINES[req.machine], check=True)
    console = Console(file=io.StringIO(), force_terminal=True, width=120)  # the live line, drawn as on a tty
    c0, t0 = time.process_time(), time.perf_counter()
    with Display(console) as shown:
        result = launch(request, store=store, events=shown)
    for name, values in result.outputs.items():  # the result, as run prints it
        console.print(f"  {name} = {outputs_text(result.program, name, values)}")
    return time.perf_counter() - t0, result.tokens_per_s, len(result.tokens), time.process_time() - c0, None


def drawn(screen) -> bool:
    """Nothing the screen was told to show waits to be drawn: no widget waits to repaint, lay
    out or scroll (a widget clears its flag as it posts its update to the screen), no update
    waits in the screen's queue, and the screen has nothing dirty left for its next frame.
    Textual's private state: the bench's only way to see the frame that drew the outcome."""
    if (screen._dirty_widgets or screen._layout_required or screen._scroll_required or screen._repaint_required
            or screen._compositor._dirty_regions or not screen._message_queue.empty()):
        return False
    return not any(w._repaint_required or w._layout_required or w._scroll_required
                   for w in screen.walk_children())


def press_enter(app) -> None:
    """Enter, handed to the app as the terminal's driver hands it a key. Why not ``pilot.press``:
    it then waits for the screen to go idle, posting a message to every widget (some 2 ms of CPU
    a press, and sleeps checking the process's CPU clock), harness work no user's key press does,
    timed as the dashboard's."""
    key = events.Key("enter", "\r")
    key.set_sender(app)
    app._driver.send_message(key)


class FrameClock:
    """When the app's last frame ended (its ``_display``, called once per frame): the end of
    the dashboard's wait is that frame's end, not the moment the bench's poll noticed it."""

    def __init__(self, app):
        self.last_end = 0.0
        self._display = app._display
        app._display = self

    def __call__(self, *args, **kwargs):
        try:
            return self._display(*args, **kwargs)
        finally:
            self.last_end = time.perf_counter()


async def dashboard_launch(pilot, name: str, machine: str | None = None) -> tuple:
    """(wall seconds, generation tokens/s, tokens, CPU seconds of both processes, of the screen's)
    of ``/run NAME`` typed into the dashboard."""
    app, screen = pilot.app, pilot.app.main
    clock = app._display if isinstance(app._display, FrameClock) else FrameClock(app)
    before = screen.last_outcome
    prompt = screen.query_one("#prompt")
    await pilot.pause()  # what the last launch left for after its outcome (the footer's keys) done, as a user's
    prompt.value = command(name, machine)
    while not drawn(screen):  # the typed line on the screen, as the user sees it before pressing enter
        await asyncio.sleep(0.005)
    worker = getattr(screen.launches, "pid", None)  # the launch process (started at the first /run)
    c0, w0, t0 = time.process_time(), process_cpu(worker), time.perf_counter()
    press_enter(app)
    while screen.last_outcome is before or screen.running:
        await asyncio.sleep(0.005)
    outcome_at = time.perf_counter()
    while not drawn(screen):  # the frames that draw the outcome
        await asyncio.sleep(0.005)
    wall = max(clock.last_end, outcome_at) - t0
    w1 = process_cpu(worker)
    screen_cpu = time.process_time() - c0
    cpu = screen_cpu + (w1 - w0 if w0 is not None and w1 is not None else 0.0)
    cpu = cpu if worker is None or w0 is not None else None
    out = screen.last_outcome
    if out.status != "done":
        raise RuntimeError(f"{command(name, machine)}: {out.status} {out.error}")
    return wall, out.launch.tokens_per_s, out.tokens, cpu, screen_cpu


class InProcessLaunches:
    """The screen's ``launches`` as they were before the launch process: ``execute_launch`` on
    the calling thread (the dashboard's MLX thread), on a store made there."""

    def __init__(self):
        self.store = None

    def run(self, req, sink, cancel, job: int, *, check: bool):
        self.store = self.store or CircuitStore()
        return execute_launch(req, sink, cancel, check=check, store=self.store, machine=MACHINES[req.machine])

    def close(self) -> None:
        pass


async def measure(kernels, repeat: int, in_process: bool = False, machine: str | None = None) -> dict:
    """Per kernel and side, ``repeat`` (wall s, tokens/s, tokens), the sides taking turns."""
    store = CircuitStore()
    rows = {}
    async with DashboardApp(chat=NoChat()).run_test(size=SIZE) as pilot:
        screen = pilot.app.main
        launchers = {"dashboard": screen.launches}
        if in_process:
            launchers["in-process"] = InProcessLaunches()
        for name in kernels:
            cli_launch(name, store, machine)  # warm-up: the circuit's cache read, clang
            for launcher in launchers.values():
                screen.launches = launcher
                await dashboard_launch(pilot, name, machine)
            sides = {"cli": [], **{side: [] for side in launchers}}
            for _ in range(repeat):  # taking turns: every side under the same load
                sides["cli"].append(cli_launch(name, store, machine))
                for side, launcher in launchers.items():
                    screen.launches = launcher
                    sides[side].append(await dashboard_launch(pilot, name, machine))
            rows[name] = sides
        screen.launches = launchers["dashboard"]
    return rows


def report(rows: dict) -> None:
    """One line per kernel and side: median wall s, ratio to the CLI, median tokens/s, median CPU s
    (the screen's process alone beside it)."""
    print(f"{'kernel':<16}{'tokens':>7}  {'side':<12}{'wall s':>8}{'ratio':>8}{'tok/s':>9}{'cpu s':>8}{'screen':>8}")
    for name, sides in rows.items():
        cli = statistics.median(run[0] for run in sides["cli"])
        for side, runs in sides.items():
            wall = statistics.median(run[0] for run in runs)
            tps = statistics.median(run[1] for run in runs)
            cpus = [run[3] for run in runs if run[3] is not None]
            cpu = f"{statistics.median(cpus):8.2f}" if cpus else f"{'-':>8}"
            screens = [run[4] for run in runs if run[4] is not None]
            cpu += f"{statistics.median(screens):8.3f}" if screens else f"{'-':>8}"
            print(f"{name:<16}{runs[0][2]:>7}  {side:<12}{wall:>8.2f}{wall / cli:>8.2f}{tps:>9.1f}{cpu}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kernels", nargs="*", default=list(KERNELS))
    p.add_argument("--repeat", type=int, default=3, help="launches per side per kernel (default 3)")
    p.add_argument("--machine", choices=list(MACHINES), default=None,
                   help="launch every kernel on this machine, both sides (default: its launch file's, else the default)")
    p.add_argument("--in-process", action="store_true",
                   help="also time the dashboard with the launch on its MLX thread (before the launch process)")
    ns = p.parse_args(argv)
    if ns.machine:
        print(f"machine: {ns.machine}")
    try:
        report(asyncio.run(measure(ns.kernels, ns.repeat, ns.in_process, ns.machine)))
    except CommandError as e:  # a kernel the dashboard's /run would refuse: its message, not a traceback
        print(f"error: {e}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
