"""``python -m qwengpu_mlx``: the same command line as ``qwengpu-mlx``."""

import sys

from .cli import main

sys.exit(main())
