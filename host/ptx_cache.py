"""clang's PTX kept on disk, as NVRTC's callers keep theirs: a cold ``run`` skips clang.

Why: clang costs about 0.1 s of a cold ``run`` (a process start, the CUDA front end, the
NVPTX back end) for output that is the same every time the same file is compiled. An
entry is trusted only as ccache's direct mode trusts one: its key hashes what clang is
(its resolved path, size and modification time), the command line, the working
directory, the environment variables clang reads includes from and the source's bytes;
the entry then lists every file clang read (its own ``-MD`` dependency list: the
prelude's headers and any ``#include`` of the user's) with each one's SHA-256, and a
lookup hashes them all again. A changed header, prelude or clang is a miss; a missing,
unreadable or malformed entry is a miss; clang's errors are never cached.

Entries are one JSON file each in ``cache_dir()/ptx`` (``qwengpu-mlx cache info|clear``),
written atomically; the :data:`KEEP` most recently used are kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable

from qwengpu_mlx.core.cache_location import cache_dir

FORMAT = 1
KEEP = 256  # entries kept: a few hundred kernels' PTX, a few KB each
SUBDIR = "ptx"
# variables that change which headers clang reads (the rest of its input is the command line)
_INCLUDE_ENV = ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "QWENGPU_CLANG")


def ptx_dir(directory: Path | None = None) -> Path:
    return (directory or cache_dir()) / SUBDIR


def entry_key(command: list[str], source: Path) -> str:
    """Hash of everything clang's output depends on but the files it reads (checked apart)."""
    clang = Path(command[0]).resolve()
    st = clang.stat()
    h = hashlib.sha256(f"ptx {FORMAT}\n{clang}\n{st.st_size}\n{st.st_mtime_ns}\n{os.getcwd()}\n".encode())
    h.update("\0".join(command).encode() + b"\0")
    h.update("\0".join(f"{k}={os.environ.get(k, '')}" for k in _INCLUDE_ENV).encode() + b"\0")
    h.update(source.read_bytes())
    return h.hexdigest()


def _sha256(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def make_dependencies(text: str) -> list[str]:
    """The files of a make rule ``target: a b \\`` as clang's ``-MD`` writes it (escaped spaces kept)."""
    body = text.replace("\\\n", " ").split(": ", 1)[-1]
    names, current, i = [], "", 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body) and body[i + 1] in " #":
            current, i = current + body[i + 1], i + 2
            continue
        if ch.isspace():
            names += [current] if current else []
            current = ""
        else:
            current += ch
        i += 1
    return names + ([current] if current else [])


def lookup(key: str, directory: Path | None = None) -> str | None:
    """The cached PTX for ``key`` when every file it was compiled from is unchanged, else None."""
    entry = ptx_dir(directory) / f"{key[:32]}.json"
    try:
        meta = json.loads(entry.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("key") != key or not isinstance(meta.get("ptx"), str):
        return None
    deps = meta.get("deps")
    if not isinstance(deps, dict) or any(_sha256(path) != digest for path, digest in deps.items()):
        return None
    with contextlib.suppress(OSError):  # used now: pruning keeps the recently used
        os.utime(entry)
    return meta["ptx"]


def store(key: str, ptx: str, dependencies: list[str], directory: Path | None = None) -> None:
    """Keep ``ptx`` under ``key`` with the hashes of the files it came from; a cache that
    cannot be written is skipped (the next run compiles again)."""
    deps = {str(Path(d).resolve()): _sha256(d) for d in dependencies}
    if not deps or None in deps.values():
        return
    folder = ptx_dir(directory)
    text = json.dumps({"format": FORMAT, "key": key, "deps": deps, "ptx": ptx})
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".ptx-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, folder / f"{key[:32]}.json")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _prune(folder)
    except OSError:
        return


def _prune(folder: Path) -> None:
    entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        with contextlib.suppress(OSError):
            old.unlink()


def cached_compile(command: list[str], source: Path, compile_with_deps: Callable[[str], str]) -> str:
    """PTX of ``source`` compiled by ``command``: from the cache when it checks out, else
    ``compile_with_deps(deps_file)`` (clang run with ``-MD -MF deps_file``), then kept."""
    try:
        key = entry_key(command, source)
    except OSError:  # clang or the source cannot be read: the compile itself says why
        return compile_with_deps("")
    found = lookup(key)
    if found is not None:
        return found
    with tempfile.TemporaryDirectory(prefix="qwengpu-deps-") as tmp:
        deps_file = os.path.join(tmp, "deps.d")
        ptx = compile_with_deps(deps_file)
        with contextlib.suppress(OSError):
            store(key, ptx, make_dependencies(Path(deps_file).read_text()))
    return ptx
