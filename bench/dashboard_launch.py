"""The dashboard's launch against the command line's, the same launch, as a ratio.

    .venv/bin/python -m bench.dashboard_launch [KERNEL ...] [--repeat 3] [--in-process]

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
  under Textual's pilot), timed from the key press until the screen has been redrawn with
  the outcome (``wait_for_refresh`` after the screen took it): the launch, every token
  decoded into the launch and machine panes, the status bar, the check. The launch runs
  in the dashboard's launch process (``tui.launch_process``);
* ``in-process`` (with ``--in-process``): the same dashboard with the launch on its MLX
  thread, as before the launch process (the screen and the launch sharing one GIL).

Printed per kernel: its tokens, the median wall time of each side, the dashboard's ratio to
the CLI (its target: at most 1.25), and each side's generation tokens/s.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import time

from rich.console import Console

from qwengpu_mlx.cli.progress import Display
from qwengpu_mlx.core.float32 import outputs_text
from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.runtime import CircuitStore, LaunchRequest, launch
from qwengpu_mlx.tui.app import DashboardApp
from qwengpu_mlx.tui.chat import NoChat
from qwengpu_mlx.tui.commands import parse
from qwengpu_mlx.tui.launcher import execute_launch

KERNELS = ("dot", "collatz_steps")
SIZE = (160, 48)


def cli_launch(name: str, store: CircuitStore) -> tuple[float, float, int]:
    """(wall seconds, generation tokens/s, tokens) of ``run NAME --check`` in-process."""
    req = parse(f"/run {name}").run
    request = LaunchRequest(req.source, req.args, kernel=req.kernel, block=req.block, grid=req.grid, check=True)
    console = Console(file=io.StringIO(), force_terminal=True, width=120)  # the live line, drawn as on a tty
    t0 = time.perf_counter()
    with Display(console) as shown:
        result = launch(request, store=store, events=shown)
    for name, values in result.outputs.items():  # the result, as run prints it
        console.print(f"  {name} = {outputs_text(result.program, name, values)}")
    return time.perf_counter() - t0, result.tokens_per_s, len(result.tokens)


async def dashboard_launch(pilot, name: str) -> tuple[float, float, int]:
    """(wall seconds, generation tokens/s, tokens) of ``/run NAME`` typed into the dashboard."""
    screen = pilot.app.main
    before = screen.last_outcome
    prompt = screen.query_one("#prompt")
    prompt.value = f"/run {name}"
    t0 = time.perf_counter()
    await pilot.press("enter")
    while screen.last_outcome is before or screen.running:
        await asyncio.sleep(0.005)
    await screen.wait_for_refresh()  # the outcome on the screen, drawn
    wall = time.perf_counter() - t0
    out = screen.last_outcome
    if out.status != "done":
        raise RuntimeError(f"/run {name}: {out.status} {out.error}")
    return wall, out.launch.tokens_per_s, out.tokens


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


async def measure(kernels, repeat: int, in_process: bool = False) -> dict:
    """Per kernel and side, ``repeat`` (wall s, tokens/s, tokens), the sides taking turns."""
    store = CircuitStore()
    rows = {}
    async with DashboardApp(chat=NoChat()).run_test(size=SIZE) as pilot:
        screen = pilot.app.main
        launchers = {"dashboard": screen.launches}
        if in_process:
            launchers["in-process"] = InProcessLaunches()
        for name in kernels:
            cli_launch(name, store)  # warm-up: the circuit's cache read, clang
            for launcher in launchers.values():
                screen.launches = launcher
                await dashboard_launch(pilot, name)
            sides = {"cli": [], **{side: [] for side in launchers}}
            for _ in range(repeat):  # taking turns: every side under the same load
                sides["cli"].append(cli_launch(name, store))
                for side, launcher in launchers.items():
                    screen.launches = launcher
                    sides[side].append(await dashboard_launch(pilot, name))
            rows[name] = sides
        screen.launches = launchers["dashboard"]
    return rows


def report(rows: dict) -> None:
    """One line per kernel and side: median wall s, ratio to the CLI, median tokens/s."""
    print(f"{'kernel':<16}{'tokens':>7}  {'side':<12}{'wall s':>8}{'ratio':>8}{'tok/s':>9}")
    for name, sides in rows.items():
        cli = statistics.median(w for w, _, _ in sides["cli"])
        for side, runs in sides.items():
            wall = statistics.median(w for w, _, _ in runs)
            tps = statistics.median(t for _, t, _ in runs)
            print(f"{name:<16}{runs[0][2]:>7}  {side:<12}{wall:>8.2f}{wall / cli:>8.2f}{tps:>9.1f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kernels", nargs="*", default=list(KERNELS))
    p.add_argument("--repeat", type=int, default=3, help="launches per side per kernel (default 3)")
    p.add_argument("--in-process", action="store_true",
                   help="also time the dashboard with the launch on its MLX thread (before the launch process)")
    ns = p.parse_args(argv)
    report(asyncio.run(measure(ns.kernels, ns.repeat, ns.in_process)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
