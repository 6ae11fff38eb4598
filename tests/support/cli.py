"""Test helpers: clang availability, kernel files, and the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qwengpu_mlx.core.errors import ClangNotFound
from qwengpu_mlx.host.frontend import find_clang

REPO = Path(__file__).resolve().parents[2]


def have_clang() -> bool:
    try:
        find_clang()
        return True
    except ClangNotFound:
        return False


needs_clang = pytest.mark.skipif(not have_clang(), reason="clang not installed")


def cu(tmp_path: Path, code: str, name: str = "kernel.cu") -> Path:
    path = tmp_path / name
    path.write_text(code)
    return path


def cli(*argv, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m qwengpu_mlx.cli.main ARGV``; ``run`` defaults to the reference backend here,
    since these tests are about the machine and its front end."""
    argv = [str(a) for a in argv]
    if argv and argv[0] == "run" and "--backend" not in argv:
        argv += ["--backend", "reference"]
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "qwengpu_mlx.cli.main", *argv],
                          capture_output=True, text=True, cwd=REPO, env=full_env, timeout=120)
