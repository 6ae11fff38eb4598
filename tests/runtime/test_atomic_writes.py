"""The circuit cache and ``build`` write atomically and refuse bad places.

A temporary file or directory beside the target, renamed into place: an interrupt
(Ctrl-C, simulated by a save that raises KeyboardInterrupt midway) leaves nothing
behind. Any unreadable or malformed cache entry is rebuilt with one note. ``build``
refuses a non-empty ``--out`` unless ``--force``, NaN and inf sizes, and unwritable
places, as ``error:`` lines (exit 2), for ``build`` and ``build --base`` alike.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import mlx.core as mx
import pytest

from qwengpu_mlx.runtime import circuit_cache as cache
from qwengpu_mlx.runtime.checkpoint import atomic_directory, random_config, random_weights, save_checkpoint
from qwengpu_mlx.cli.main import main
from qwengpu_mlx.core.errors import OutputError
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE

KEY = "cd" * 32
VOCAB = [f"t{i}" for i in range(96)]


@pytest.fixture(scope="module")
def small():
    """A small compact circuit (the equivalence tests' one), to cache."""
    from qwengpu_mlx.compiler.compact import compact

    from tests.support.circuits import build_circuit

    return compact(build_circuit()[0])


def _entry(d: Path) -> tuple[Path, Path]:
    return d / f"circuit-{KEY[:16]}.safetensors", d / f"circuit-{KEY[:16]}.json"


def _interrupting_save(after: int):
    """An ``mx.save_safetensors`` that writes ``after`` files, then half a file and Ctrl-C."""
    real, calls = mx.save_safetensors, []

    def save(path, arrays, *a, **k):
        calls.append(path)
        if len(calls) > after:
            Path(path).write_bytes(b"half a file")
            raise KeyboardInterrupt
        return real(path, arrays, *a, **k)

    return save


def _rebuilt_with_one_note(small, d: Path) -> list[str]:
    logged, built = [], []
    got = cache.cached_compact(PUBLISHED_MACHINE, lambda: built.append(1) or small, directory=d, log=logged.append,
                               key=KEY)
    assert got is small and built == [1]
    assert len(logged) == 1 and "rebuilding" in logged[0], logged
    assert cache.load(KEY, d) is not None  # the rebuilt entry was written back and is good
    return logged


# -- the circuit cache


def test_cache_save_interrupted_leaves_no_temporary_file(small, tmp_path, monkeypatch):
    monkeypatch.setattr(mx, "save_safetensors", _interrupting_save(0))
    with pytest.raises(KeyboardInterrupt):
        cache.save(small, KEY, tmp_path)
    assert list(tmp_path.iterdir()) == []  # no tmp*.safetensors, no entry


def test_cache_save_interrupted_keeps_the_old_entry(small, tmp_path, monkeypatch):
    cache.save(small, KEY, tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    monkeypatch.setattr(mx, "save_safetensors", _interrupting_save(0))
    with pytest.raises(KeyboardInterrupt):
        cache.save(small, KEY, tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_manifest_that_is_not_an_object_is_rebuilt(small, tmp_path):
    cache.save(small, KEY, tmp_path)
    _, manifest = _entry(tmp_path)
    manifest.write_text("[]")
    with pytest.raises(cache.CacheProblem, match="malformed manifest"):
        cache.load(KEY, tmp_path)
    _rebuilt_with_one_note(small, tmp_path)


def test_a_manifest_without_its_fields_is_rebuilt(small, tmp_path):
    cache.save(small, KEY, tmp_path)
    _, manifest = _entry(tmp_path)
    m = json.loads(manifest.read_text())
    del m["fields"]
    manifest.write_text(json.dumps(m))
    assert "malformed manifest" in _rebuilt_with_one_note(small, tmp_path)[0]


def test_a_weights_path_that_is_a_directory_is_rebuilt(small, tmp_path):
    cache.save(small, KEY, tmp_path)
    weights, _ = _entry(tmp_path)
    weights.unlink()
    weights.mkdir()
    (weights / "x").write_text("x")
    assert "not a file" in _rebuilt_with_one_note(small, tmp_path)[0]
    assert weights.is_file()


def test_a_manifest_path_that_is_a_directory_is_rebuilt(small, tmp_path):
    cache.save(small, KEY, tmp_path)
    _, manifest = _entry(tmp_path)
    manifest.unlink()
    manifest.mkdir()
    assert "unreadable manifest" in _rebuilt_with_one_note(small, tmp_path)[0]


def test_unreadable_weights_are_rebuilt(small, tmp_path, monkeypatch):
    """(Simulated: the tests may run as root, who reads a mode-000 file.)"""
    cache.save(small, KEY, tmp_path)
    real, failed = cache._sha256, []

    def sha256(path):
        if not failed:
            failed.append(path)
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(cache, "_sha256", sha256)
    assert "unreadable (Permission denied)" in _rebuilt_with_one_note(small, tmp_path)[0]


# -- checkpoints: save_checkpoint and `build`


def _tiny_checkpoint(out: Path, **kw) -> Path:
    cfg = random_config(32, layers=4, vocab_size=96, linear_key_dim=8, linear_value_dim=8, head_dim=8)
    w = random_weights(cfg, seed=1)
    names = sorted(w)
    parts = [{k: w[k] for k in names[: len(names) // 2]}, {k: w[k] for k in names[len(names) // 2:]}]
    return save_checkpoint(out, cfg, parts, VOCAB, eos_token="t0", shards=2, **kw)


def test_save_checkpoint_interrupted_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(mx, "save_safetensors", _interrupting_save(1))  # the second shard
    with pytest.raises(KeyboardInterrupt):
        _tiny_checkpoint(tmp_path / "ck")
    assert list(tmp_path.iterdir()) == []


def test_save_checkpoint_refuses_a_non_empty_directory_and_force_replaces_it(tmp_path):
    import mlx_lm

    out = tmp_path / "ck"
    out.mkdir()
    (out / "model-00001-of-00009.safetensors").write_bytes(b"stale")  # what used to break mlx-lm
    with pytest.raises(OutputError, match="not empty.*--force"):
        _tiny_checkpoint(out)
    assert [p.name for p in out.iterdir()] == ["model-00001-of-00009.safetensors"]  # untouched
    _tiny_checkpoint(out, force=True)
    assert "model-00001-of-00009.safetensors" not in {p.name for p in out.iterdir()}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # no temporary or set-aside directory left
    mlx_lm.load(str(out))  # the result loads


def test_an_empty_out_directory_is_replaced_in_place(tmp_path):
    out = tmp_path / "ck"
    out.mkdir()
    _tiny_checkpoint(out)
    assert (out / "config.json").is_file() and sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


def test_atomic_directory_reports_unwritable_places(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="not a directory"):
        with atomic_directory(tmp_path / "file"):
            pass
    with pytest.raises(OutputError, match="not a directory"):
        with atomic_directory(tmp_path / "file" / "out"):
            pass

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied", str(tmp_path))

    monkeypatch.setattr("tempfile.mkdtemp", refuse)
    with pytest.raises(OutputError, match="not writable .Permission denied"):
        with atomic_directory(tmp_path / "new"):
            pass


def _cli(capsys, *argv) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr().err


def test_cli_build_refuses_a_non_empty_out_before_any_work(tmp_path, capsys):
    out = tmp_path / "ck"
    out.mkdir()
    (out / "old.safetensors").write_bytes(b"x")
    for extra in ([], ["--base", tmp_path / "no-such-base"]):
        rc, err = _cli(capsys, "build", "--out", out, *extra)
        assert rc == 2 and err.startswith("error: --out") and "not empty" in err and "--force" in err
    assert [p.name for p in out.iterdir()] == ["old.safetensors"]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-5", "lots"])
def test_cli_build_refuses_nan_inf_and_non_positive_max_params(value, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["build", "--out", str(tmp_path / "ck"), "--max-params", value])
    assert e.value.code == 2 and "--max-params" in capsys.readouterr().err
    assert not (tmp_path / "ck").exists()


def test_cli_build_reports_an_unwritable_out_as_an_error(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    rc, err = _cli(capsys, "build", "--out", tmp_path / "file" / "ck")
    assert rc == 2 and err.startswith("error: ") and "not a directory" in err and "Traceback" not in err


def _fake_build_from_base(interrupt: bool):
    """``build_from_base`` that writes part of a checkpoint into the directory it is given."""

    def build(base, out, machine_name, **kw):
        (out / "model-00001-of-00002.safetensors").write_bytes(b"x")
        if interrupt:
            raise KeyboardInterrupt
        (out / "tokenizer.json").write_text("{}")
        lay = SimpleNamespace(base_layers=1, circuit_layers=1, hidden=8, base_hidden=2, circuit_offset=4,
                              launch_tokens=3, launch_id=lambda i: 10 + i)
        return SimpleNamespace(out=out, layout=lay, bytes=1, shards=2, seconds=0.0)

    return build


def test_cli_build_base_interrupted_leaves_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("qwengpu_mlx.splice.pipeline.build_from_base", _fake_build_from_base(True))
    rc, err = _cli(capsys, "build", "--base", tmp_path / "base", "--out", tmp_path / "ck")
    assert rc == 130 and "interrupted" in err
    assert list(tmp_path.iterdir()) == []


def test_cli_build_base_writes_everything_then_renames(tmp_path, capsys, monkeypatch):
    out = tmp_path / "ck"
    out.mkdir()
    (out / "stale.safetensors").write_bytes(b"x")
    monkeypatch.setattr("qwengpu_mlx.splice.pipeline.build_from_base", _fake_build_from_base(False))
    rc, _ = _cli(capsys, "build", "--base", tmp_path / "base", "--out", out, "--force")
    assert rc == 0 and sorted(p.name for p in out.iterdir()) == ["model-00001-of-00002.safetensors",
                                                                   "tokenizer.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


# -- write_combined on its own (splice/build.py), with the splice's stages faked


def _fake_splice(monkeypatch, shards: list[dict], interrupt_at: int | None):
    from qwengpu_mlx.splice import build

    def combined_shards(*a):
        for k, part in enumerate(shards):
            if k == interrupt_at:
                raise KeyboardInterrupt
            yield part

    lay = SimpleNamespace(base_layers=1, circuit_layers=0, base={}, circuit={}, launch_tokens=1,
                          config=lambda base_config: {"model_type": "qwen3_5"}, launch_id=lambda i: 5 + i)
    monkeypatch.setattr(build, "check_fits", lambda *a: None)
    monkeypatch.setattr(build, "estimate", lambda *a, **kw: SimpleNamespace(line=lambda: "faked"))
    monkeypatch.setattr(build, "SpliceLayout", lambda *a: lay)
    monkeypatch.setattr(build, "text_config", lambda cfg: cfg)
    monkeypatch.setattr(build, "suppression_row", lambda *a, **kw: SimpleNamespace(
        alpha=1.0, min_projection=1.0, target=1.0, positions=1, margin=1.0, row=[0.0], stored=[0.0]))
    monkeypatch.setattr(build, "launch_row_as_held", lambda *a: None)
    monkeypatch.setattr(build, "combined_shards", combined_shards)
    plan = SimpleNamespace(config=lambda: {}, weight_shards=lambda: iter(()))
    base = SimpleNamespace(parameters=lambda: {})
    return lambda out, **kw: build.write_combined(out, base, {}, plan, ["x"], [1], **kw)


def test_write_combined_interrupted_leaves_nothing(tmp_path, monkeypatch):
    shards = [{"a": mx.zeros(2)}, {"b": mx.zeros(2)}]
    write = _fake_splice(monkeypatch, shards, interrupt_at=1)
    with pytest.raises(KeyboardInterrupt):
        write(tmp_path / "combined")
    assert list(tmp_path.iterdir()) == []


def test_write_combined_writes_into_a_temporary_directory_and_renames(tmp_path, monkeypatch):
    from qwengpu_mlx.splice.build import SPLICE_RECORD

    seen = []
    shards = [{"a": mx.zeros(2)}, {"b": mx.zeros(2)}]
    write = _fake_splice(monkeypatch, shards, interrupt_at=None)
    out = tmp_path / "combined"
    report = write(out, log=lambda s: seen.append(sorted(os.listdir(tmp_path))))
    assert report.out == out
    assert all(names != ["combined"] for names in seen)  # while writing, --out did not exist yet
    assert sorted(p.name for p in out.iterdir()) == sorted(["model-00001-of-00002.safetensors",
                                                            "model-00002-of-00002.safetensors",
                                                            "model.safetensors.index.json", "config.json",
                                                            SPLICE_RECORD])
    with pytest.raises(OutputError, match="not empty"):  # and a second write is refused ...
        write(out)
    write(out, force=True)  # ... unless forced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["combined"]
