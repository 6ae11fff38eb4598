"""``python -m qwengpu_mlx``: the same command line as ``qwengpu-mlx``."""

import sys

from qwengpu_mlx.cli.main import main

sys.exit(main())
