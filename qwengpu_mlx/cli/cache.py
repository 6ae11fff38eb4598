"""``qwengpu-mlx cache info|clear``: where the compiled circuit is kept, what it holds.

The pruning policy itself lives in ``circuit_cache.prune`` (run after every save) and,
for the native step's packs, ``native_runner._prune``; this only shows the directory
and empties it on request.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from qwengpu_mlx.host import ptx_cache
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
    lines += pack_lines(d)
    ptx = ptx_files(d)
    if ptx:
        lines.append(f"  {len(ptx)} compiled kernels' PTX (clang's output, reused while the source, its "
                     f"headers and clang are unchanged), {_size(_bytes(ptx))}")
    chat = chat_files(d)
    if chat:
        lines.append(f"  {len(chat)} chat files (prompt caches per base, folded-circuit configs), "
                     f"{_size(sum(p.stat().st_size for p in chat))}")
    return lines


def packs(directory) -> list[tuple[Path, list[Path]]]:
    """The native step's packs (``runtime/native_runner.py`` writes ``native-pack-KEY.npz``
    and the manifest ``native-pack-KEY.json`` that vouches for it): (manifest, its files),
    most recently used first (a load touches the manifest)."""
    d = Path(directory)
    if not d.is_dir():
        return []
    found = []
    for manifest in d.glob("native-pack-*.json"):
        with contextlib.suppress(OSError):  # pruned meanwhile by another process
            found.append((manifest.stat().st_mtime, manifest))
    return [(m, [m, *filter(Path.exists, [m.with_suffix(".npz")])]) for _, m in sorted(found, reverse=True)]


def stray_packs(directory) -> list[Path]:
    """Pack arrays with no manifest, and temporaries of pack writes that never finished."""
    d = Path(directory)
    if not d.is_dir():
        return []
    orphans = [p for p in d.glob("native-pack-*.npz") if not p.with_suffix(".json").exists()]
    return sorted(d.glob(".native-pack-*")) + orphans


def _bytes(paths) -> int:
    total = 0
    for p in paths:
        with contextlib.suppress(OSError):
            total += p.stat().st_size
    return total


def pack_lines(directory) -> list[str]:
    """``cache info``'s lines for the native step's packs: one per pack, then leftovers."""
    found, stray = packs(directory), stray_packs(directory)
    if not found and not stray:
        return []
    lines = [f"{len(found)} native step packs, {_size(sum(_bytes(f) for _, f in found) + _bytes(stray))} "
             f"(what a launch's native step runs, so a cold run skips loading the circuit; pruned "
             f"after each new pack to the most recently used)"]
    for manifest, files in found:
        with contextlib.suppress(OSError):
            used = time.strftime("%Y-%m-%d %H:%M", time.localtime(manifest.stat().st_mtime))
            lines.append(f"  {manifest.with_suffix('.npz').name}  {_size(_bytes(files)):>9}  used {used}")
    if stray:
        lines.append(f"  {len(stray)} leftover pack files of interrupted writes (cache clear removes them)")
    return lines


def clear_packs(directory) -> tuple[int, int]:
    """Remove every pack (manifest first: a half-removed pack is never trusted) and leftover;
    (files removed, bytes freed)."""
    files, freed = 0, 0
    for path in [p for _, fs in packs(directory) for p in fs] + stray_packs(directory):
        with contextlib.suppress(FileNotFoundError):
            size = path.stat().st_size
            path.unlink()
            files, freed = files + 1, freed + size
    return files, freed


def ptx_files(directory) -> list[Path]:
    """``host/ptx_cache``'s entries (one JSON file per compiled kernel) and its leftovers."""
    d = ptx_cache.ptx_dir(Path(directory))
    return sorted(d.glob("*.json")) + sorted(d.glob(".ptx-*")) if d.is_dir() else []


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
    pack_files, pack_bytes = clear_packs(cache.cache_dir())
    files, freed = files + pack_files, freed + pack_bytes
    for path in chat_files(cache.cache_dir()) + ptx_files(cache.cache_dir()):
        size = path.stat().st_size
        path.unlink(missing_ok=True)
        files, freed = files + 1, freed + size
    print(f"cleared {cache.cache_dir()}: {files} files, {_size(freed)}")
    return 0
