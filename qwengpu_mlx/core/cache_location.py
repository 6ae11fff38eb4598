"""Where the tool's caches live: one directory, chosen in one place.

The compiled circuit (``runtime/circuit_cache``), the native step and its packs, the
chat's prompt caches and the host's PTX (``host/ptx_cache``) all sit in it, so that
``qwengpu-mlx cache info|clear`` sees everything and ``$QWENGPU_MLX_CACHE`` moves
everything (the tests point it at a private folder). It lives on the lowest floor
because the host, below the runtime, needs it too.
"""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_cache_dir


def cache_dir() -> Path:
    """``$QWENGPU_MLX_CACHE``, else the platform's user cache directory for the tool."""
    override = os.environ.get("QWENGPU_MLX_CACHE")
    if override:
        return Path(override)
    return Path(user_cache_dir("qwengpu-mlx", appauthor=False))
