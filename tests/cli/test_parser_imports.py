"""The command line answers ``--help`` and usage errors without importing MLX, mlx-lm,
Textual, the chat loop or the runtime: each subcommand's module is imported only when it
runs (``qwengpu_mlx.cli.main``)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("mlx", "mlx_lm", "textual", "qwengpu_mlx.runtime", "qwengpu_mlx.chat.session", "qwengpu_mlx.splice",
         "qwengpu_mlx.compiler", "qwengpu_mlx.tui")

PROBE = """
import sys
from qwengpu_mlx.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = {heavy!r}
print(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy)))
"""


def loaded_after(*argv: str) -> str:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], capture_output=True, text=True,
                          timeout=120)
    return proc.stdout.strip().splitlines()[-1]


def test_help_imports_nothing_heavy():
    assert loaded_after("--help") == "[]"


def test_a_usage_error_imports_nothing_heavy():
    assert loaded_after("run", "--no-such-option") == "[]"


def test_machine_needs_nothing_heavy_and_cache_loads_the_runtime():
    assert loaded_after("machine", "--machine", "large") == "[]"
    assert "'qwengpu_mlx.runtime.circuit_cache'" in loaded_after("cache", "info")  # the probe sees imports


def test_run_on_the_embedded_circuit_imports_no_mlx_lm_chat_or_splice():
    """mlx-lm's package imports transformers (seconds of start-up); a launch on the embedded
    circuit needs neither it nor the chat nor the splice (``--model`` imports them when given)."""
    code = ("import sys, qwengpu_mlx.cli.run; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('mlx_lm', 'transformers') or m.startswith(('qwengpu_mlx.chat.', 'qwengpu_mlx.splice'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stderr
