"""SHA-256 of a file, read in 1 MiB blocks (checkpoints are gigabytes): the cache's and the
base manifest's one definition."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
