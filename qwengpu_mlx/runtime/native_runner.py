"""A runner over the native step alone, from its cached pack: a launch without the circuit.

Why: a cold ``run`` spent most of its start-up (about 4 of 5 s on the large machine)
loading the compact circuit, building the MLX-ops runner's weights and packing them
again for the native step, only to run every token on the native step. Once a store's
runner has its native step (the step passed its probe here), :func:`save_pack` writes
what that step runs (weights and program as packed arrays, the embedding rows, which
heads hold memory) beside the circuit cache, under a key of the circuit (its own cache
key: machine, shape, levels, compiler source) and of the packing code. :func:`load_pack`
trusts an entry only when its manifest's key and SHA-256 match (as ``circuit_cache``
does), and :class:`PackedRunner` runs launches over it exactly as the circuit runner's
native path does (the same step, the same arrays).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

import mlx.core as mx
import numpy as np

from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS
from qwengpu_mlx.compiler.machine_circuit import NARROW
from qwengpu_mlx.core.hashing import file_sha256
from qwengpu_mlx.runtime import native
from qwengpu_mlx.runtime.circuit_cache import cache_dir, circuit_key, write_atomically
from qwengpu_mlx.runtime.gpu_trust import VERDICTS_FILE, _read_verdicts
from qwengpu_mlx.runtime.mapped_arrays import map_file, npz_views
from qwengpu_mlx.runtime.native_step import NativeStep, SparseRows

FORMAT = 1
KEEP = 4  # packs kept (most recently used first): two machines and a superseded pair
_HERE = Path(__file__).resolve().parent
# the pack is a function of the circuit and of these sources (how it is packed and run)
_SOURCES = ("native_step.py", "circuit_layers.py", "sparse_product.py", "circuit_runner.py", "native_runner.py")


class PackedRunner:
    """The launch runner interface (``runner.py``) over a :class:`NativeStep` alone."""

    def __init__(self, step: NativeStep, machine, rows: SparseRows, memory_heads, heads: dict[int, list[int]]):
        self.machine = machine
        self.native = step
        self.memory_heads = memory_heads
        self.track_margins = False
        self._rows, self._heads = rows, heads
        self.reset()

    def reset(self) -> None:
        self._packed = None
        self.min_margin = float("inf")

    def step(self, tokens: list[int]) -> mx.array:
        """Feed tokens (prefill or one step); logits of the last one."""
        return mx.array(self._logits(tokens))

    def step_top_two(self, tokens: list[int]) -> tuple[int, float]:
        """:meth:`step`'s greedy token and logit margin (``native_step.top_two``), without
        handing the logits to MLX."""
        self._ready()
        at, logit_margin, margin = self.native.tokens_top_two(tokens, self._packed, self._rows, self.track_margins)
        if self.track_margins:
            self.min_margin = min(self.min_margin, margin)
        return at, logit_margin

    def _ready(self) -> None:
        """The step's states, made at a sequence's first token."""
        if self._packed is None:
            self._packed = self.native.zeros()

    def _logits(self, tokens: list[int]) -> np.ndarray:
        self._ready()
        lg, margin = self.native.tokens(tokens, self._packed, self._rows, self.track_margins)
        if self.track_margins:
            self.min_margin = min(self.min_margin, margin)
        return lg

    def weights(self) -> list[mx.array]:
        """The arrays the step runs from (its weight blobs and the embedding rows), as the
        circuit runner's ``weights()``: tests check that no launch changes them."""
        return [mx.array(self.native.floats), mx.array(self.native.ints), mx.array(self._rows.vals)]

    def recurrent_state(self, layer: int, head: int) -> np.ndarray:
        """The state [Dv, Dk] of dense head index ``head`` in ``layer`` (float32, a copy)."""
        i = self._heads[layer].index(head)
        if self._packed is None:
            _, _, (_, _, Dv, Dk), _ = self.native.layout[layer]
            return np.zeros((Dv, Dk), np.float32)
        return np.array(self.native.recurrent(self._packed, layer)[0, i])


def _source_digest() -> bytes:
    h = hashlib.sha256()
    for name in _SOURCES:
        h.update(name.encode() + b"\0" + (_HERE / name).read_bytes() + b"\0")
    return h.digest()


# the packing code this process runs, read when it was imported: a process whose sources
# were edited since writes its packs under its own code's key, not the edited one's
_SOURCE_DIGEST = _source_digest()


def pack_key(machine, build: str | None = None) -> str:
    """The circuit's cache key, the packing code's source and the native step's build key
    (the program a pack holds is read by that step's C++: ``build``, the key of the module
    that runs it; by default the source's now), hashed."""
    h = hashlib.sha256(f"native pack {FORMAT}\n{circuit_key(machine, NARROW, DEFAULT_LEVELS)}\n".encode())
    h.update((build or native.build_key()).encode())
    h.update(_SOURCE_DIGEST)
    return h.hexdigest()


def _paths(key: str, directory: Path | None) -> tuple[Path, Path]:
    arrays = (directory or cache_dir()) / f"native-pack-{key[:16]}.npz"
    return arrays, arrays.with_suffix(".json")


def save_pack(runner, machine, directory: Path | None = None) -> None:
    """Write the pack of a circuit runner whose native step runs ``machine``'s own circuit
    (not for a step over a module ``native.load`` did not load: no build key to file it under)."""
    build = native.key_of(runner.native.module)
    if build is None:
        return
    arrays = runner.native.arrays()
    heads = {L: list(mz.heads) for L, mz in enumerate(runner.mixers) if mz is not None}
    rows = SparseRows.of(np.array(runner.embedding), np.array(runner.embedding_pos))
    arrays.update(rows_ptr=rows.rowptr, rows_cols=rows.cols, rows_vals=rows.vals,
                  memory_heads=np.array(runner.memory_heads, np.int64).reshape(-1, 2),
                  head_layers=np.array([L for L, hs in heads.items() for _ in hs], np.int64),
                  heads=np.array([h for hs in heads.values() for h in hs], np.int64))
    key = pack_key(machine, build)
    path, manifest = _paths(key, directory)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(name: str) -> None:
        with open(name, "wb") as f:
            np.savez(f, **arrays)

    write_atomically(path, write)
    text = json.dumps({"format": FORMAT, "key": key, "sha256": file_sha256(path)})
    write_atomically(manifest, lambda name: Path(name).write_text(text))
    _prune(path.parent)


def _prune(folder: Path) -> None:
    """Remove all but the :data:`KEEP` most recently used packs (a new compiler or packing
    code writes a new one; the old ones would only take room)."""
    manifests = sorted(folder.glob("native-pack-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in manifests[KEEP:]:
        for f in (old, old.with_suffix(".npz")):  # manifest first: a half-removed pack is never trusted
            with contextlib.suppress(OSError):
                f.unlink()


def load_pack(machine, directory: Path | None = None, build: str | None = None) -> dict | None:
    """The pack's arrays when its manifest vouches for them, else None (the caller builds):
    read-only views of the memory-mapped file (``mapped_arrays``: no copy of 48 MB at start-up).
    ``build``: the key of the native module that will run it (:func:`pack_key`)."""
    key = pack_key(machine, build)
    path, manifest = _paths(key, directory)
    try:
        meta = json.loads(manifest.read_text())
        data = map_file(path)
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("key") != key or meta.get("sha256") != hashlib.sha256(data).hexdigest():
        return None
    try:
        arrays = npz_views(data)
    except (OSError, ValueError, KeyError):
        return None
    with contextlib.suppress(OSError):  # used now: the last pack _prune removes
        os.utime(manifest)
    return arrays


def trusted_module():
    """The built native module when its probe verdict here is cached and trusted, else None
    (then the store takes the long way, which probes)."""
    if mx.default_device() != mx.cpu:
        return None
    found = native.load(lambda line: None)
    if found.module is None:
        return None
    verdict = _read_verdicts(native.native_dir() / VERDICTS_FILE).get(f"native circuit step {found.key}")
    return found.module if isinstance(verdict, dict) and verdict.get("trusted") is True else None


def packed_runner(machine, directory: Path | None = None) -> PackedRunner | None:
    """A runner over ``machine``'s cached pack, or None when there is none to trust."""
    module = trusted_module()
    arrays = load_pack(machine, directory, native.key_of(module)) if module is not None else None
    if arrays is None:
        return None
    heads: dict[int, list[int]] = {}
    for L, h in zip(arrays["head_layers"], arrays["heads"]):
        heads.setdefault(int(L), []).append(int(h))
    memory_heads = tuple((int(L), int(h)) for L, h in arrays["memory_heads"])
    rows = SparseRows(arrays["rows_ptr"], arrays["rows_cols"], arrays["rows_vals"])
    return PackedRunner(NativeStep.from_arrays(arrays, module), machine, rows, memory_heads, heads)
