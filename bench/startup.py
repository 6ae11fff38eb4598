"""Where a cold ``run`` of the dot product spends its time, per machine.

    .venv/bin/python -m bench.startup [--machines published,large] [--repeat 3] [--imports 12]

First the whole command as a user types it (``qwengpu-mlx run examples/kernels/dot.cu
--arg ...``), a fresh process each time: its wall time and its CPU time (this machine is
shared: the wall time also counts waits for a core, the CPU time does not). Then the
same work phase by phase, each in a fresh process (imports are only cold once):

- ``interpreter``: ``python -c pass``;
- ``imports``: the ``run`` command's module and what it pulls in (``-X importtime``'s
  heaviest with ``--imports N``);
- ``clang``: the kernel compiled to PTX by clang; ``compile``: the same through the PTX
  cache (``host/ptx_cache``), what a cold ``run`` pays once the kernel was compiled
  before, with the PTX parsed and the kernel picked;
- ``bind``: arguments into memory and immediates, the program lowered for the machine;
- ``native check``: the native step's build key and module (built once per MLX);
- ``pack read``: the native step's cached pack (file read, SHA-256, arrays), the step
  built over it; a run with no pack reads the circuit cache instead (``--circuit`` times
  that read too);
- ``prefill`` and ``launch``: the prompt, then the generated launch tokens;
- ``output``: the command's summary printed.

Every figure is the median of ``--repeat`` fresh processes. Where ``PYTHONDONTWRITEBYTECODE``
is set (this shared machine sets it), a module edited since its ``.pyc`` was written is
compiled from source in every process, which a user's install never pays; the bench says so.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOT = ["examples/kernels/dot.cu", "--arg", "a=1,2,3", "--arg", "b=4,5,6", "--arg", "out=0", "--arg", "n=3"]
DOT_ARGS = {"a": [1, 2, 3], "b": [4, 5, 6], "out": [0], "n": 3}
PHASES = ("imports", "clang", "compile", "bind", "native check", "pack read", "prefill", "launch", "output")


class Clock:
    """Wall and CPU seconds of each phase, in order."""

    def __init__(self):
        self.seconds: dict[str, tuple[float, float]] = {}
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def mark(self, phase: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.seconds[phase] = (wall - self._wall, cpu - self._cpu)
        self._wall, self._cpu = wall, cpu


def phases(machine_name: str, circuit: bool) -> dict:
    """One cold run's phases, timed in this (fresh) process. The imports are the timed
    work itself, so they are made here, in order, not at the top of the module."""
    clock = Clock()
    from qwengpu_mlx.cli import run as cli_run  # the timed import: what `qwengpu-mlx run` imports
    clock.mark("imports")
    from qwengpu_mlx.core.machine import MACHINES
    from qwengpu_mlx.host import frontend
    from qwengpu_mlx.runtime import native, native_runner
    from qwengpu_mlx.runtime.generate import generate_launch
    from qwengpu_mlx.runtime.launch import LaunchRequest, bind_request, compile_request

    machine = MACHINES[machine_name]
    source = ROOT / DOT[0]
    frontend._clang_ptx(frontend.clang_command(frontend.find_clang(), source), source, "")
    clock.mark("clang")
    req = LaunchRequest(source=source, args=DOT_ARGS, machine=machine)
    compile_request(req)
    clock.mark("compile")
    program = bind_request(req)
    clock.mark("bind")
    found = native.load(lambda line: None)
    clock.mark("native check")
    runner = native_runner.packed_runner(machine)
    clock.mark("pack read")
    launch = generate_launch(program, runner)
    prefill, generate = launch.prefill_seconds, launch.generate_seconds
    clock.mark("launch")
    with redirect_stdout(io.StringIO()):
        cli_run.print_outputs(replace(req, program=program), "model", launch.steps, launch.outputs)
        print("\n".join(cli_run.summary_lines(launch, cli_run.peak_memory())))
    clock.mark("output")
    out = {p: list(s) for p, s in clock.seconds.items()}
    wall, cpu = out.pop("launch")  # split by the launch's own prefill and generation clocks
    out["prefill"] = [prefill, cpu * prefill / max(wall, 1e-9)]
    out["launch"] = [wall - prefill, cpu * (wall - prefill) / max(wall, 1e-9)]
    out["tokens"] = [len(launch.prompt), len(launch.tokens), round(generate, 4)]
    out["native"] = found.module is not None
    if circuit:
        out["circuit read"] = list(_circuit_read(machine))
    return out


def _circuit_read(machine) -> tuple[float, float]:
    """The circuit cache's read (the cold path when no native pack is cached)."""
    from qwengpu_mlx.runtime import CircuitStore  # timed with its clock, after the phases

    wall, cpu = time.perf_counter(), time.process_time()
    CircuitStore().compact(machine)
    return time.perf_counter() - wall, time.process_time() - cpu


def _child(cmd: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall, CPU seconds of the child, the process) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc


def cold_command(machine: str, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``qwengpu-mlx run`` of the dot product."""
    cmd = [sys.executable, "-m", "qwengpu_mlx.cli.main", "run", *DOT, "--machine", machine]
    runs = []
    for _ in range(repeat):
        wall, cpu, proc = _child(cmd)
        if proc.returncode != 0 or "out = [32]" not in proc.stdout:
            raise SystemExit(f"the run failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
        runs.append((wall, cpu))
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def cold_phases(machine: str, repeat: int, circuit: bool) -> dict:
    """Median per phase over fresh processes, and the interpreter's own start."""
    runs = []
    for _ in range(repeat):
        cmd = [sys.executable, "-m", "bench.startup", "--phases", machine] + (["--circuit"] if circuit else [])
        _, _, proc = _child(cmd)
        if proc.returncode != 0:
            raise SystemExit(f"the phases failed: {proc.stderr.strip()[-400:]}")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    starts = [_child([sys.executable, "-c", "pass"])[:2] for _ in range(repeat)]
    out = {"interpreter": [statistics.median(s[0] for s in starts), statistics.median(s[1] for s in starts)]}
    for phase in PHASES + (("circuit read",) if circuit else ()):
        out[phase] = [statistics.median(r[phase][0] for r in runs), statistics.median(r[phase][1] for r in runs)]
    out["tokens"], out["native"] = runs[0]["tokens"], runs[0]["native"]
    return out


def heaviest_imports(count: int) -> list[tuple[int, str]]:
    """``-X importtime``'s self times of the run command's imports, summed by package
    (``qwengpu_mlx.host``, ``numpy``, ``rich`` ...), heaviest first (microseconds)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import qwengpu_mlx.cli.run"], cwd=ROOT,
                          capture_output=True, text=True)
    groups: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        own = parts[0].rsplit(":", 1)[-1].strip()
        if len(parts) != 3 or not own.isdigit():
            continue
        dotted = parts[2].strip().split(".")
        name = ".".join(dotted[:2]) if dotted[0] == "qwengpu_mlx" else dotted[0]
        groups[name] = groups.get(name, 0) + int(own)
    return sorted(((us, name) for name, us in groups.items()), reverse=True)[:count]


def report(machine: str, ns) -> None:
    wall, cpu = cold_command(machine, ns.repeat)
    print(f"\n{machine} machine: `qwengpu-mlx run` of the dot product, cold: {wall:.2f} s wall, {cpu:.2f} s CPU "
          f"(median of {ns.repeat}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    ph = cold_phases(machine, ns.repeat, ns.circuit)
    prompt, generated, _ = ph["tokens"]
    notes = {"prefill": f"{prompt} prompt tokens", "launch": f"{generated} launch tokens",
             "clang": "(not on a run whose PTX is cached)", "pack read": "" if ph["native"] else "(no native step)",
             "circuit read": "(only when no pack is cached)"}
    total = 0.0
    for phase in ("interpreter",) + PHASES + (("circuit read",) if ns.circuit else ()):
        w, c = ph[phase]
        total += w if phase not in ("clang", "circuit read") else 0.0
        print(f"  {phase:13s} {1e3 * w:7.0f} ms wall {1e3 * c:7.0f} ms CPU  {notes.get(phase, '')}")
    print(f"  {'sum':13s} {1e3 * total:7.0f} ms wall (the phases of a run with its PTX and native pack cached)")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--machines", default="published,large")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--imports", type=int, default=0, help="list the N heaviest imports of the run command")
    ap.add_argument("--circuit", action="store_true", help="also time the circuit cache's read")
    ap.add_argument("--phases", help=argparse.SUPPRESS)  # one fresh process's phases, as JSON
    ns = ap.parse_args(argv)
    if ns.phases:
        print(json.dumps(phases(ns.phases, ns.circuit)))
        return 0
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set, so every process compiles each module whose .pyc is stale "
              "from source (about 0.1 s of CPU here; an installed package's are written once): run with "
              "`env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=DIR` for a user's start-up")
    for machine in ns.machines.split(","):
        report(machine, ns)
    if ns.imports:
        groups = heaviest_imports(10_000)
        print(f"\nthe run command's imports by package (-X importtime self times, one process, "
              f"{sum(us for us, _ in groups) / 1e3:.0f} ms in all):")
        for us, name in groups[:ns.imports]:
            print(f"  {us / 1e3:7.1f} ms  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
