"""On-disk cache of the compiled circuit (its compact form), checked before it is trusted.

Building the circuit takes a few seconds per process; the cache keeps the compact
circuit (``compiler.compact.CompactCircuit``, stored sparse) in one safetensors file
plus a JSON manifest. The manifest holds the circuit's key (a hash of the machine
definition, the target shape, the levels and the source of every module the weights
are a function of) and the SHA-256 of the weights file. A cache entry is used only if
both match; a corrupt, truncated, mismatched, unreadable or malformed entry is reported
(one line) and rebuilt. Both files are written atomically (a temporary file beside the
entry, renamed into place; removed on any exception, Ctrl-C included).

Where: ``$QWENGPU_MLX_CACHE``, else the platform's user cache directory
(``platformdirs``: ``~/.cache/qwengpu-mlx`` on Linux, ``~/Library/Caches/qwengpu-mlx`` on
macOS).

Pruning (:func:`prune`, after every successful save): an entry of the same machine,
shape and levels but another key (the compiler changed) is removed at once, and of the
rest only the :data:`KEEP` most recently used are kept (a load marks an entry used).
``qwengpu-mlx cache info|clear`` shows and empties the directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable

import mlx.core as mx
import numpy as np

from qwengpu_mlx import compiler, core
from qwengpu_mlx.compiler import compact as c
from qwengpu_mlx.compiler.compact import CompactCircuit
from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS
from qwengpu_mlx.compiler.machine_circuit import NARROW
from qwengpu_mlx.core.cache_location import cache_dir  # the tool's one cache folder (re-exported)
from qwengpu_mlx.core.hashing import file_sha256

FORMAT = 1
_CORE = Path(core.__file__).resolve().parent
# the weights are a function of these sources (and of the machine, shape and levels)
_SOURCES = ("machine.py", "isa.py", "vocab.py", "encoding.py")


KEEP = 6  # entries kept by prune: two machines and their variants, with room to spare


def _compiler_dir() -> Path:
    return Path(compiler.__file__).resolve().parent


def variant_key(machine, shape, levels) -> str:
    """Hash of what the circuit is (machine, shape, levels), not of the compiler's source:
    two entries of one variant are the same circuit built by two compiler versions."""
    return hashlib.sha256(f"format {FORMAT}\n{machine!r}\n{shape!r}\n{levels!r}\n".encode()).hexdigest()


def circuit_key(machine, shape, levels) -> str:
    """Hash of everything the circuit's weights depend on."""
    h = hashlib.sha256(f"format {FORMAT}\n{machine!r}\n{shape!r}\n{levels!r}\n".encode())
    files = [_CORE / name for name in _SOURCES] + sorted(_compiler_dir().glob("*.py"))
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _sha256(path: Path) -> str:
    """SHA-256 of a file's content (through symlinks)."""
    return file_sha256(path)


# -- (de)serialising a CompactCircuit: arrays go to tensors (sparse), the rest to JSON

def _flatten(obj, prefix: str, arrays: dict, meta: dict) -> None:
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        name = f"{prefix}{f.name}"
        if isinstance(v, np.ndarray):
            flat = v.reshape(-1)
            nz = np.flatnonzero(flat)
            arrays[name + ".idx"] = nz.astype(np.uint32)
            arrays[name + ".val"] = flat[nz]
            meta[name] = {"array": list(v.shape), "dtype": str(v.dtype)}
        elif dataclasses.is_dataclass(v):
            meta[name] = {"node": type(v).__name__}
            _flatten(v, name + ".", arrays, meta)
        elif isinstance(v, list) and v and dataclasses.is_dataclass(v[0]):
            meta[name] = {"list": len(v), "node": type(v[0]).__name__}
            for i, item in enumerate(v):
                _flatten(item, f"{name}.{i}.", arrays, meta)
        elif v is None:
            meta[name] = {"none": True}
        else:
            meta[name] = {"value": v, "tuple": isinstance(v, tuple)}


def _unflatten(cls, prefix: str, arrays: dict, meta: dict, classes: dict):
    kwargs = {}
    for f in dataclasses.fields(cls):
        name = f"{prefix}{f.name}"
        m = meta[name]
        if "array" in m:
            a = np.zeros(int(np.prod(m["array"])), dtype=m["dtype"])
            a[arrays[name + ".idx"].astype(np.int64)] = arrays[name + ".val"]
            kwargs[f.name] = a.reshape(m["array"])
        elif "list" in m:
            kwargs[f.name] = [_unflatten(classes[m["node"]], f"{name}.{i}.", arrays, meta, classes)
                              for i in range(m["list"])]
        elif "node" in m:
            kwargs[f.name] = _unflatten(classes[m["node"]], name + ".", arrays, meta, classes)
        elif "none" in m:
            kwargs[f.name] = None
        else:
            v = m["value"]
            kwargs[f.name] = tuple(v) if m.get("tuple") else v
    return cls(**kwargs)


def _classes() -> dict:
    return {k.__name__: k for k in (c.CompactCircuit, c.CompactLayer, c.CompactMixer, c.CompactMLP)}


def _entry_paths(key: str, directory: Path | None) -> tuple[Path, Path]:
    """(weights, manifest) of the cache entry for ``key``."""
    weights = (directory or cache_dir()) / f"circuit-{key[:16]}.safetensors"
    return weights, weights.with_suffix(".json")


def write_atomically(path: Path, write: Callable[[str], None]) -> None:
    """``write(name)`` a temporary file beside ``path``, then rename it into place.

    Why: a reader never sees half a file, and an interrupt (Ctrl-C included) or a failed
    write leaves nothing behind: the temporary file is removed on any exception. What
    stands in the entry's place is replaced, a directory too (the cache's own name)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    try:
        write(tmp)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def save(cc, key: str, directory: Path | None = None, variant: str | None = None) -> Path:
    """Write ``cc`` under its key: the weights, then the manifest that vouches for them,
    each atomically (see :func:`write_atomically`)."""
    weights, mpath = _entry_paths(key, directory)
    weights.parent.mkdir(parents=True, exist_ok=True)
    arrays, meta = {}, {}
    _flatten(cc, "", arrays, meta)
    write_atomically(weights, lambda name: mx.save_safetensors(name, {k: mx.array(v) for k, v in arrays.items()}))
    manifest = {"format": FORMAT, "key": key, "variant": variant, "sha256": _sha256(weights), "fields": meta}
    write_atomically(mpath, lambda name: Path(name).write_text(json.dumps(manifest)))
    return weights


class CacheProblem(Exception):
    """Why a cache entry was not used (it is rebuilt)."""


def _read_manifest(mpath: Path) -> dict:
    """The manifest as a dict; CacheProblem for anything else (unreadable, not JSON, not an object)."""
    try:
        manifest = json.loads(mpath.read_text())
    except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
        raise CacheProblem(f"unreadable manifest {mpath} ({e})") from None
    if not isinstance(manifest, dict):
        raise CacheProblem(f"malformed manifest {mpath} (a JSON {type(manifest).__name__}, not an object)")
    return manifest


def _check_manifest(manifest: dict, key: str, weights: Path) -> None:
    """The entry is this circuit's, and its manifest has what a load reads."""
    if manifest.get("format") != FORMAT or manifest.get("key") != key:
        raise CacheProblem(f"{weights} was built for another machine, shape or compiler version "
                           f"(key {str(manifest.get('key'))[:16]}, expected {key[:16]})")
    if not isinstance(manifest.get("sha256"), str) or not isinstance(manifest.get("fields"), dict):
        raise CacheProblem(f"malformed manifest {weights.with_suffix('.json')} (no sha256 or fields)")


def _check_weights(weights: Path, sha256: str) -> None:
    """The weights file is a readable regular file whose SHA-256 is the manifest's."""
    if not os.path.lexists(weights):
        raise CacheProblem(f"{weights} is missing")
    if not weights.is_file():
        raise CacheProblem(f"{weights} is not a file")
    try:
        digest = _sha256(weights)
    except OSError as e:
        raise CacheProblem(f"{weights} is unreadable ({e.strerror or e})") from None
    if digest != sha256:
        raise CacheProblem(f"{weights} is corrupt (SHA-256 differs from the manifest)")


def load(key: str, directory: Path | None = None):
    """The cached CompactCircuit for ``key``, None if there is none; CacheProblem if the entry
    is bad in any way (so that the caller rebuilds it rather than failing)."""
    weights, mpath = _entry_paths(key, directory)
    if not os.path.lexists(mpath) and not os.path.lexists(weights):
        return None
    manifest = _read_manifest(mpath)
    _check_manifest(manifest, key, weights)
    _check_weights(weights, manifest["sha256"])
    try:
        arrays = {k: np.array(v) for k, v in mx.load(str(weights)).items()}
        cc = _unflatten(CompactCircuit, "", arrays, manifest["fields"], _classes())
    except Exception as e:  # a file that hashes right but does not parse: still rebuilt
        raise CacheProblem(f"{weights} does not hold a circuit ({type(e).__name__}: {e})") from None
    with contextlib.suppress(OSError):  # used now: the last entry prune removes (a read-only cache still loads)
        os.utime(mpath)
    return cc


def cached_compact(machine, build, *, directory: Path | None = None, log=None, key: str | None = None):
    """The compact circuit for ``machine``: from the cache when it checks out, else ``build()``
    (which returns the CompactCircuit) and store it, then :func:`prune` the directory.
    ``log`` gets one line per problem. A caller's own ``key`` names no variant: an entry
    under it supersedes nothing."""
    log = log or (lambda msg: print(f"qwengpu-mlx: {msg}", file=sys.stderr))
    variant = variant_key(machine, NARROW, DEFAULT_LEVELS) if key is None else None
    key = key or circuit_key(machine, NARROW, DEFAULT_LEVELS)
    try:
        cc = load(key, directory)
        if cc is not None:
            return cc
    except CacheProblem as e:
        log(f"cached circuit not used: {e}; rebuilding it")
    cc = build()
    try:
        save(cc, key, directory, variant)
    except (OSError, RuntimeError) as e:  # a read-only home still runs, it just rebuilds next time
        log(f"could not write the circuit cache in {directory or cache_dir()} ({e})")
        return cc
    prune(directory, keep=key, variant=variant)
    return cc


# -- what is in the directory: entries, their sizes, pruning and clearing


@dataclasses.dataclass
class Entry:
    """One cache entry: its manifest, its weights, what the manifest says of it."""

    manifest: Path
    weights: Path
    key: str | None
    variant: str | None
    used: float  # the manifest's mtime: written or last loaded
    bytes: int


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _entry(mpath: Path) -> Entry:
    try:
        manifest = _read_manifest(mpath)
    except CacheProblem:
        manifest = {}
    weights = mpath.with_suffix(".safetensors")
    key, variant = manifest.get("key"), manifest.get("variant")
    return Entry(mpath, weights, key if isinstance(key, str) else None, variant if isinstance(variant, str) else None,
                 mpath.stat().st_mtime, _size(mpath) + _size(weights))


def entries(directory: Path | None = None) -> list[Entry]:
    """Every entry in the cache directory, most recently used first."""
    d = directory or cache_dir()
    found = []
    for mpath in d.glob("circuit-*.json") if d.is_dir() else []:
        with contextlib.suppress(OSError):  # gone meanwhile (another process pruned it)
            found.append(_entry(mpath))
    return sorted(found, key=lambda e: e.used, reverse=True)


def leftovers(directory: Path | None = None) -> list[Path]:
    """Temporary files of writes that never finished (a process killed mid-write) and
    weights without a manifest."""
    d = directory or cache_dir()
    if not d.is_dir():
        return []
    orphans = [w for w in d.glob("circuit-*.safetensors") if not w.with_suffix(".json").exists()]
    return sorted(d.glob(".circuit-*")) + orphans


def _remove(entry: Entry) -> None:
    for path in (entry.manifest, entry.weights):  # manifest first: a half-removed entry is never trusted
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def prune(directory: Path | None = None, *, keep: str, variant: str | None = None, limit: int = KEEP) -> list[Entry]:
    """Remove superseded entries: those of ``variant`` under another key than ``keep``, then
    all but the ``limit`` most recently used. ``keep``'s own entry always stays. Returns
    what was removed; a file another process holds or removed is skipped quietly."""
    removed = []
    rest = []
    for e in entries(directory):
        if e.key == keep:
            continue
        if variant is not None and e.variant == variant:
            removed.append(e)
        else:
            rest.append(e)
    removed += rest[max(limit - 1, 0):]  # keep's entry counts against the limit
    for e in removed:
        with contextlib.suppress(OSError):
            _remove(e)
    return removed


def clear(directory: Path | None = None) -> tuple[int, int]:
    """Remove every entry and leftover file; (files removed, bytes freed)."""
    files, freed = 0, 0
    paths = [p for e in entries(directory) for p in (e.manifest, e.weights)] + leftovers(directory)
    for path in paths:
        size = _size(path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            files, freed = files + 1, freed + size
    return files, freed


def fingerprint(cc) -> str:
    """SHA-256 of a compact circuit's every array and field: equal iff the weights are."""
    arrays, meta = {}, {}
    _flatten(cc, "", arrays, meta)
    h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode() + b"\0" + str(a.dtype).encode() + b"\0" + a.tobytes())
    return h.hexdigest()
