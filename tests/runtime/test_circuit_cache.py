"""The on-disk circuit cache: a faithful round trip, and bad entries detected and rebuilt."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qwengpu_mlx.runtime import circuit_cache as cache
from qwengpu_mlx.compiler.compact import compact
from qwengpu_mlx.compiler.levels import DEFAULT_LEVELS
from qwengpu_mlx.compiler.machine_circuit import NARROW
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
from qwengpu_mlx.runtime.circuit_runner import CircuitRunner

from tests.support.circuits import build_circuit

ROOT = Path(__file__).resolve().parents[2]
KEY = "ab" * 32


@pytest.fixture(scope="module")
def small():
    plan, ids = build_circuit()
    return compact(plan), [ids["HDR", 1], ids["C0", 3], ids["C1", 2]]


def _same(a, b, where=""):
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), where + f.name
        elif dataclasses.is_dataclass(x):
            _same(x, y, f"{where}{f.name}.")
        elif isinstance(x, list) and x and dataclasses.is_dataclass(x[0]):
            assert len(x) == len(y)
            for i, (p, q) in enumerate(zip(x, y)):
                _same(p, q, f"{where}{f.name}[{i}].")
        else:
            assert x == y or (x is None and y is None), where + f.name


def test_round_trip_is_exact(small, tmp_path):
    cc, prompt = small
    cache.save(cc, KEY, tmp_path)
    back = cache.load(KEY, tmp_path)
    _same(cc, back)
    a, b = CircuitRunner(cc), CircuitRunner(back)
    assert np.array_equal(np.array(a.step(prompt)), np.array(b.step(prompt)))


def test_nothing_cached_is_none(tmp_path):
    assert cache.load(KEY, tmp_path) is None


def _entry(tmp_path):
    return tmp_path / f"circuit-{KEY[:16]}.safetensors", tmp_path / f"circuit-{KEY[:16]}.json"


def test_corrupt_weights_detected_and_rebuilt(small, tmp_path):
    cc, _ = small
    weights, _ = _entry(tmp_path)
    cache.save(cc, KEY, tmp_path)
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x10  # one flipped bit in the tensor payload
    weights.write_bytes(bytes(data))
    with pytest.raises(cache.CacheProblem, match="corrupt"):
        cache.load(KEY, tmp_path)
    logged, built = [], []
    got = cache.cached_compact(PUBLISHED_MACHINE, lambda: built.append(1) or cc, directory=tmp_path,
                               log=logged.append, key=KEY)
    assert got is cc and built == [1]
    assert len(logged) == 1 and "corrupt" in logged[0] and "rebuilding" in logged[0]
    _same(cc, cache.load(KEY, tmp_path))  # the rebuilt entry was written back


def test_truncated_file_and_bad_manifest_detected(small, tmp_path):
    cc, _ = small
    weights, manifest = _entry(tmp_path)
    cache.save(cc, KEY, tmp_path)
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(cache.CacheProblem, match="corrupt"):
        cache.load(KEY, tmp_path)
    manifest.write_text("{not json")
    with pytest.raises(cache.CacheProblem, match="unreadable manifest"):
        cache.load(KEY, tmp_path)
    manifest.unlink()
    with pytest.raises(cache.CacheProblem, match="unreadable manifest"):
        cache.load(KEY, tmp_path)


def test_mismatched_entry_detected(small, tmp_path):
    cc, _ = small
    cache.save(cc, KEY, tmp_path)
    other = KEY[:16] + "cd" * 24  # same file name, another circuit
    with pytest.raises(cache.CacheProblem, match="another machine"):
        cache.load(other, tmp_path)
    _, manifest = _entry(tmp_path)
    m = json.loads(manifest.read_text())
    m["format"] = cache.FORMAT + 1
    manifest.write_text(json.dumps(m))
    with pytest.raises(cache.CacheProblem, match="another machine"):
        cache.load(KEY, tmp_path)


def test_key_follows_machine_shape_and_levels():
    base = cache.circuit_key(PUBLISHED_MACHINE, NARROW, DEFAULT_LEVELS)
    assert base == cache.circuit_key(PUBLISHED_MACHINE, NARROW, DEFAULT_LEVELS)
    assert base != cache.circuit_key(dataclasses.replace(PUBLISHED_MACHINE, mem_words=120), NARROW, DEFAULT_LEVELS)
    assert base != cache.circuit_key(PUBLISHED_MACHINE, dataclasses.replace(NARROW, hidden=1 << 16), DEFAULT_LEVELS)
    assert base != cache.circuit_key(PUBLISHED_MACHINE, NARROW, dataclasses.replace(DEFAULT_LEVELS, K=2.0 ** 20))


def test_cli_run_rebuilds_a_corrupt_cache(store, tmp_path):
    """The real circuit: the entry the session's store wrote (``cached_compact``, the path the
    command line takes too: a cold run builds and stores it, as the rebuild below does) is
    corrupted; the command line reports it, rebuilds and rewrites it, and the next run uses it."""
    import shutil

    store.runner(PUBLISHED_MACHINE)  # the session's circuit, stored in its cache directory (built once)
    key = cache.circuit_key(PUBLISHED_MACHINE, NARROW, DEFAULT_LEVELS)
    for suffix in ("safetensors", "json"):
        shutil.copy(cache.cache_dir() / f"circuit-{key[:16]}.{suffix}", tmp_path)
    shutil.copytree(cache.cache_dir() / "native", tmp_path / "native")  # the built native step: not rebuilt
    env = {**__import__("os").environ, "QWENGPU_MLX_CACHE": str(tmp_path)}
    argv = [sys.executable, "-m", "qwengpu_mlx.cli.main", "run", str(ROOT / "examples/kernels/dot.cu"),
            "--arg", "a=1,2,3", "--arg", "b=4,5,6", "--arg", "out=0", "--arg", "n=3", "--json",
            "--machine", "published"]  # the machine whose entry was corrupted, whichever is the default
    (weights,) = tmp_path.glob("circuit-*.safetensors")
    assert cache.load(key, tmp_path) is not None  # a good entry, as a first run leaves it
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0xFF
    weights.write_bytes(bytes(data))
    second = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0, second.stderr
    assert "corrupt" in second.stderr and "rebuilding" in second.stderr
    assert json.loads(second.stdout)["outputs"]["out"] == [32]
    third = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert third.returncode == 0 and "rebuilding" not in third.stderr  # the rewritten entry is good
