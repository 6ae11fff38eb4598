"""The dashboard's launch against the command line's, the same launch, as a ratio.

    .venv/bin/python -m bench.dashboard_launch [KERNEL ...] [--repeat 3]

Both sides run in this one process, taking turns launch by launch (the machine is shared
and noisy: both meet the same load), after one launch each to warm up (the circuit's
cache read, clang):

* ``cli``: ``runtime.launch`` on the calling thread with the command line's progress
  sink (``cli.progress.Display`` on a terminal console), as ``qwengpu-mlx run K --check``;
* ``dashboard``: ``/run K`` typed into the dashboard (``tui.app.DashboardApp``, headless
  under Textual's pilot), timed from the key press until the screen shows the outcome:
  the launch on the dashboard's MLX thread, every token decoded into the launch and
  machine panes, the status bar, the check.

Printed per kernel: its tokens, the median wall time of each side, their ratio (the
dashboard's target: at most 1.25), and each side's generation tokens/s.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import time

from rich.console import Console

from qwengpu_mlx.cli.progress import Display
from qwengpu_mlx.runtime import CircuitStore, LaunchRequest, launch
from qwengpu_mlx.tui.app import DashboardApp
from qwengpu_mlx.tui.chat import NoChat
from qwengpu_mlx.tui.commands import parse

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
    wall = time.perf_counter() - t0
    out = screen.last_outcome
    if out.status != "done":
        raise RuntimeError(f"/run {name}: {out.status} {out.error}")
    return wall, out.launch.tokens_per_s, out.tokens


async def measure(kernels, repeat: int) -> dict:
    store = CircuitStore()
    rows = {}
    async with DashboardApp(chat=NoChat()).run_test(size=SIZE) as pilot:
        for name in kernels:
            cli_launch(name, store)  # warm-up: the circuit's cache read, clang
            await dashboard_launch(pilot, name)
            cli, dash = [], []
            for _ in range(repeat):  # taking turns: both sides under the same load
                cli.append(cli_launch(name, store))
                dash.append(await dashboard_launch(pilot, name))
            rows[name] = (cli, dash)
    return rows


def report(rows: dict) -> None:
    print(f"{'kernel':<16}{'tokens':>7}{'cli s':>9}{'dashboard s':>13}{'ratio':>8}{'cli tok/s':>11}"
          f"{'dash tok/s':>12}")
    for name, (cli, dash) in rows.items():
        c = statistics.median(w for w, _, _ in cli)
        d = statistics.median(w for w, _, _ in dash)
        ct = statistics.median(t for _, t, _ in cli)
        dt = statistics.median(t for _, t, _ in dash)
        print(f"{name:<16}{cli[0][2]:>7}{c:>9.2f}{d:>13.2f}{d / c:>8.2f}{ct:>11.1f}{dt:>12.1f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kernels", nargs="*", default=list(KERNELS))
    p.add_argument("--repeat", type=int, default=3, help="launches per side per kernel (default 3)")
    ns = p.parse_args(argv)
    report(asyncio.run(measure(ns.kernels, ns.repeat)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
