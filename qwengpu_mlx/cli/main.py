"""``qwengpu-mlx``: compile and run CUDA kernels on the SIMT machine.

The command-line interface is stable: scripts build on ``run --json``. The parser
(``parser``) knows every subcommand's options; each subcommand is its own module here
with a ``run(ns)``, imported only when it runs (mlx-lm's ``cli.py`` does the same), so
``--help`` and usage errors never import MLX, the chat or Textual.
"""

from __future__ import annotations

import importlib
import os
import sys

from qwengpu_mlx.cli.parser import build_parser
from qwengpu_mlx.core.errors import QwenGpuError

COMMANDS = {"compile": "compile", "run": "run", "check": "check", "build": "build", "eval": "eval",
            "machine": "machine", "tui": "tui", "chat": "chat", "cache": "cache"}  # command -> module here


def _command(name: str):
    """The subcommand's module, imported now (the one lazy import: start-up time)."""
    return importlib.import_module(f"qwengpu_mlx.cli.{COMMANDS[name]}")


def _stdout_gone() -> None:
    """The reader closed stdout (``| head``): point it at devnull so that the interpreter's
    final flush does not fail again (Python's documented recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout has no file descriptor (captured in a test)
        pass


def main(argv: list[str] | None = None) -> int:
    """Run one command; its errors as one line (exit 1 for a kernel or launch that fails, 2 for
    a usage error: ``QwenGpuError.exit_status``), Ctrl-C as ``interrupted`` (130), a closed
    stdout pipe quietly (0: the reader had what it wanted)."""
    try:
        ns = build_parser().parse_args(argv)
        return _command(ns.command).run(ns)
    except QwenGpuError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:  # Ctrl-C: stop without a traceback (nothing half-written: writes are atomic)
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _stdout_gone()
        return 0


if __name__ == "__main__":
    sys.exit(main())
