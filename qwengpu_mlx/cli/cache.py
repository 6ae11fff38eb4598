"""``qwengpu-mlx cache info|clear``: where the compiled circuit is kept, what it holds.

The pruning policy itself lives in ``circuit_cache.prune`` (run after every save);
this only shows the directory and empties it on request.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from qwengpu_mlx.runtime import circuit_cache as cache


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _where(directory) -> str:
    source = "$QWENGPU_MLX_CACHE" if os.environ.get("QWENGPU_MLX_CACHE") else "the platform's user cache directory"
    return f"{directory} ({source})"


def info_lines(directory=None) -> list[str]:
    """The directory, then one line per entry (most recently used first), then leftovers."""
    d = directory or cache.cache_dir()
    found, stray = cache.entries(d), cache.leftovers(d)
    total = sum(e.bytes for e in found) + sum(p.stat().st_size for p in stray if p.exists())
    lines = [f"cache: {_where(d)}",
             f"{len(found)} entries, {_size(total)}; pruned after each new entry to the {cache.KEEP} most "
             f"recently used (older compiler versions of the same circuit at once)"]
    for e in found:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.used))
        lines.append(f"  {e.weights.name}  {_size(e.bytes):>9}  used {used}")
    if stray:
        lines.append(f"  {len(stray)} leftover files of interrupted writes (cache clear removes them)")
    chat = chat_files(d)
    if chat:
        lines.append(f"  {len(chat)} chat files (prompt caches per base, folded-circuit configs), "
                     f"{_size(sum(p.stat().st_size for p in chat))}")
    return lines


def chat_files(directory) -> list:
    """What the chat keeps beside the circuits: ``chat.prefix``'s prompt caches and
    ``splice.folded``'s plan configs (small; each rebuilt when missing)."""
    d = Path(directory)
    if not d.is_dir():
        return []
    return sorted([*d.glob("prompt-*.safetensors"), *d.glob("folded-*.json")])


def run(ns) -> int:
    if ns.action == "info":
        print("\n".join(info_lines()))
        return 0
    files, freed = cache.clear()
    for path in chat_files(cache.cache_dir()):
        size = path.stat().st_size
        path.unlink(missing_ok=True)
        files, freed = files + 1, freed + size
    print(f"cleared {cache.cache_dir()}: {files} files, {_size(freed)}")
    return 0
