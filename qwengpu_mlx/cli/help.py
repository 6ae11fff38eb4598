"""The command line's help texts: what the tool is, and examples per subcommand.

Kept apart from the parser so that the examples read as one page and stay runnable
from the repository root (every path is an example shipped with the project).
"""

from __future__ import annotations

import argparse

DESCRIPTION = """\
qwengpu-mlx: compile CUDA kernels and run them on the small SIMT GPU built into a
Qwen3.5 model's weights (on MLX), checked against an exact reference interpreter."""

EPILOG = """\
examples:
  qwengpu-mlx run examples/kernels/vec_add.cu          # arguments from vec_add.json
  qwengpu-mlx run examples/kernels/dot.cu --check      # replay every step on the reference
  qwengpu-mlx machine                                  # the machine's limits
  qwengpu-mlx run --help                               # each command has examples"""

EXAMPLES = {
    "compile": """\
examples:
  qwengpu-mlx compile examples/kernels/dot.cu                 # the machine blocks
  qwengpu-mlx compile examples/kernels/dot.cu --emit ptx      # clang's PTX
  qwengpu-mlx compile examples/kernels/dot.cu --emit tokens   # the launch prompt (ids; dot.json's arguments)
  qwengpu-mlx compile --emit layout                           # the circuit, per layer""",
    "run": """\
examples:
  qwengpu-mlx run examples/kernels/vec_add.cu                 # arguments from vec_add.json beside it
  qwengpu-mlx run examples/kernels/dot.cu --arg a=1,2,3 --arg b=4,5,6 --arg out=0 --arg n=3
  qwengpu-mlx run examples/kernels/dot.cu --args my_launch.json --arg n=2
  qwengpu-mlx run examples/kernels/dot.cu --check --json      # every step replayed; one JSON object
  qwengpu-mlx run examples/kernels/dot.cu --backend reference --trace

arguments: --arg NAME=v1,v2,... for a pointer (its array), --arg NAME=v for a scalar. Without
any --arg the KERNEL.json beside the kernel is used when there is one; --args FILE reads
another of that form ({"block": 4, "grid": 1, "args": {"a": [1, 2], "n": 2}}), and --arg
overrides its entries. Progress (circuit build, prefill, tokens) goes to stderr on a terminal,
not with --json unless --progress.""",
    "check": """\
examples:
  qwengpu-mlx run examples/kernels/dot.cu --json > launch.json
  qwengpu-mlx check examples/kernels/dot.cu --launch-tokens launch.json
  qwengpu-mlx run examples/kernels/dot.cu --json | qwengpu-mlx check examples/kernels/dot.cu --launch-tokens -""",
    "build": """\
examples:
  qwengpu-mlx build --out /tmp/qwengpu-2b                       # Qwen3.5-2B's shape, about 10 GB
  qwengpu-mlx build --out /tmp/qwengpu-1slot --machine one-slot
  qwengpu-mlx build --base Qwen/Qwen3.5-2B --out /tmp/combined  # spliced into a real model""",
    "eval": """\
examples:
  qwengpu-mlx eval chat --model demo
  qwengpu-mlx eval drift --model /tmp/combined --base Qwen/Qwen3.5-2B --tokens 64""",
    "machine": """\
examples:
  qwengpu-mlx machine
  qwengpu-mlx machine --machine one-slot""",
    "chat": """\
examples:
  qwengpu-mlx chat --model demo                  # the toy model shipped with the package
  echo "what is 6 times 7?" | qwengpu-mlx chat --model demo --json""",
    "tui": """\
examples:
  qwengpu-mlx tui
  qwengpu-mlx tui --run "/run vec_add\"""",
    "cache": """\
examples:
  qwengpu-mlx cache info
  qwengpu-mlx cache clear

The cache holds the compiled circuit (about 100 MB per machine) so that a launch starts in
seconds. Where: $QWENGPU_MLX_CACHE, else the platform's user cache directory. After each
new entry, entries of the same circuit built by another compiler version are removed, and
of the rest only the 6 most recently used are kept.""",
}


def add_examples(sub) -> None:
    """Give every subcommand its examples (shown verbatim after the options)."""
    for name, parser in sub.choices.items():
        if name in EXAMPLES:
            parser.epilog = EXAMPLES[name]
            parser.formatter_class = argparse.RawDescriptionHelpFormatter
