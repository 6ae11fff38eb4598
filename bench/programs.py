"""Every example program (``examples/programs``) on the model, checked, against the reference.

Each program runs twice as a user runs it, ``qwengpu-mlx run PROGRAM.cu [-- ARGS]``: on the
reference backend, then on the model with ``--check``. The bench prints, per program, its
launches, their launch tokens, how many were exact, whether the program's stdout and exit
status are the same on both backends, and the model/reference wall-time ratio measured in
this one run (the machine is shared and noisy, so a bare time means little).

    .venv/bin/python -m bench.programs [NAME ...]
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parent.parent / "examples" / "programs"
ARGS = {"argv_scale": ["5", "-7"]}  # programs that read argv: what the tests run them with
SUMMARY = re.compile(r"^\[launch \d+\] .* on the model: (\d+) steps, (\d+) tokens.*?(exact|WRONG|not exact)?$")


def run(path: Path, backend: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    args = ARGS.get(path.stem, [])
    cmd = [sys.executable, "-m", "qwengpu_mlx.cli.main", "run", str(path), *backend, *(["--", *args] if args else [])]
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    return done, time.perf_counter() - t


def launches(stderr: str) -> tuple[int, int, int]:
    """(launches, launch tokens, exact launches) from the model run's summary lines."""
    n = tokens = exact = 0
    for line in stderr.splitlines():
        m = SUMMARY.match(line.strip())
        if m:
            n, tokens, exact = n + 1, tokens + int(m.group(2)), exact + (m.group(3) == "exact")
    return n, tokens, exact


def main(names: list[str]) -> int:
    paths = [PROGRAMS / f"{n}.cu" for n in names] if names else sorted(PROGRAMS.glob("*.cu"))
    print(f"{'program':20} {'launches':>8} {'tokens':>7} {'exact':>5} {'same out':>8} {'model/ref':>9}")
    ok = True
    for path in paths:
        ref, ref_s = run(path, ["--backend", "reference", "--quiet"])
        model, model_s = run(path, ["--check"])
        n, tokens, exact = launches(model.stderr)
        same = ref.stdout == model.stdout and ref.returncode == model.returncode
        ok = ok and same and exact == n
        print(f"{path.stem:20} {n:8} {tokens:7} {exact:5} {'yes' if same else 'NO':>8} {model_s / ref_s:9.2f}")
    print("every launch exact and every program's output the same" if ok else "some program differed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
