"""Acquiring a base checkpoint (``splice/source.py``), with no network: a local directory,
a hand-built Hugging Face cache in offline mode, and the hub's calls replaced by fakes
that record what was asked (the order: file list, config, ``fits``, then weights)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import mlx.core as mx
import pytest

from qwengpu_mlx.splice import source
from qwengpu_mlx.splice.source import BaseSourceError, acquire, read_manifest, write_manifest

COMMIT = "0123456789abcdef0123456789abcdef01234567"
CONFIG = {"model_type": "qwen3_5", "text_config": {"hidden_size": 64}}


class Misfit(ValueError):
    """The caller's own refusal, raised from ``fits``."""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _write_base(d: Path, weights: bool = True) -> Path:
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(CONFIG))
    (d / "tokenizer.json").write_text('{"model": {"vocab": {}}}')
    if weights:
        mx.save_safetensors(str(d / "model.safetensors"), {"w": mx.arange(6, dtype=mx.float32).reshape(2, 3)})
    return d


@pytest.fixture
def no_hub(monkeypatch):
    """Any hub call fails the test: acquiring a directory or a cached repo stays off the network."""
    import huggingface_hub

    def forbidden(*a, **k):
        raise AssertionError("network call")

    for name in ("hf_hub_download", "snapshot_download"):
        monkeypatch.setattr(huggingface_hub, name, forbidden)
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", forbidden)


# --- a local directory -----------------------------------------------------------------------------------------------


def test_a_directory_is_acquired_with_the_sha256_of_every_file_read(tmp_path, no_hub):
    d = _write_base(tmp_path / "base")
    (d / "README.md").write_text("not read")
    (d / "pytorch_model.bin").write_bytes(b"pickle beside safetensors: ignored, never read")
    seen = []
    src = acquire(str(d), fits=seen.append)
    assert seen == [CONFIG] and src.config == CONFIG
    assert src.path == d.resolve() and src.repo_id is None and src.revision is None
    assert src.files == {n: _sha(d / n) for n in ("config.json", "tokenizer.json", "model.safetensors")}


def test_a_directory_with_only_pickle_weights_is_refused_naming_the_file(tmp_path, no_hub):
    d = _write_base(tmp_path / "base", weights=False)
    (d / "pytorch_model.bin").write_bytes(b"\0" * 16)
    with pytest.raises(BaseSourceError, match="pytorch_model.bin") as e:
        acquire(str(d))
    assert "pickle" in str(e.value) and "safetensors" in str(e.value)


def test_a_directory_without_config_or_weights_is_refused(tmp_path, no_hub):
    d = _write_base(tmp_path / "base", weights=False)
    with pytest.raises(BaseSourceError, match=r"no \*\.safetensors"):
        acquire(str(d))
    (d / "config.json").unlink()
    with pytest.raises(BaseSourceError, match="no config.json"):
        acquire(str(d))


def test_fits_refusing_stops_before_any_weight_is_read(tmp_path, monkeypatch, no_hub):
    d = _write_base(tmp_path / "base")
    hashed = []
    monkeypatch.setattr(source, "_sha256", lambda p: hashed.append(p) or "x")

    def fits(config):
        raise Misfit("MLP too narrow")

    with pytest.raises(Misfit, match="MLP too narrow"):
        acquire(str(d), fits=fits)
    assert hashed == []


def test_a_sharded_base_missing_a_shard_is_refused(tmp_path, no_hub):
    d = _write_base(tmp_path / "base")
    index = {"weight_map": {"w": "model-00001-of-00002.safetensors", "v": "model-00002-of-00002.safetensors"}}
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    (d / "model.safetensors").rename(d / "model-00001-of-00002.safetensors")
    with pytest.raises(BaseSourceError, match="model-00002-of-00002.safetensors"):
        acquire(str(d))


@pytest.mark.parametrize("base", ["./no-such-dir", "a/b/c", "/nowhere/at/all"])
def test_neither_a_directory_nor_a_repo_id(base, no_hub):
    with pytest.raises(BaseSourceError, match="neither a directory nor"):
        acquire(base)


def test_a_revision_with_a_directory_is_refused(tmp_path, no_hub):
    with pytest.raises(BaseSourceError, match="--revision"):
        acquire(str(_write_base(tmp_path / "base")), revision="main")


# --- offline: the local Hugging Face cache ---------------------------------------------------------------------------


def _cache_repo(hub: Path, repo: str, files: dict[str, bytes], commit: str = COMMIT) -> Path:
    """huggingface_hub's cache layout: content in blobs/, snapshots/<commit>/ links to it, refs/main names it."""
    root = hub / ("models--" + repo.replace("/", "--"))
    (root / "blobs").mkdir(parents=True)
    snap = root / "snapshots" / commit
    snap.mkdir(parents=True)
    for name, data in files.items():
        blob = hashlib.sha256(data).hexdigest()
        (root / "blobs" / blob).write_bytes(data)
        (snap / name).symlink_to(Path("../../blobs") / blob)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(commit)
    return snap


@pytest.fixture
def offline(tmp_path, monkeypatch, no_hub):
    """Offline mode over an empty cache in ``tmp_path``: the cache is read, and nothing else.

    ``snapshot_download`` is let through only with ``local_files_only=True``, and any HTTP
    request fails the test."""
    import huggingface_hub
    from huggingface_hub import _snapshot_download

    http = pytest.importorskip("httpx2" if _has("httpx2") else "httpx")  # huggingface_hub 2.x / 1.x

    def cache_only(*a, **k):
        assert k.get("local_files_only") is True
        return _snapshot_download.snapshot_download(*a, **k)

    def no_http(*a, **k):
        raise AssertionError("HTTP request while offline")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", cache_only)
    monkeypatch.setattr(http.Client, "send", no_http)
    hub = tmp_path / "hub"
    hub.mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return hub


def test_offline_a_cached_repo_resolves_to_its_snapshot_and_commit(tmp_path, offline):
    base = _write_base(tmp_path / "src")
    files = {n: (base / n).read_bytes() for n in ("config.json", "tokenizer.json", "model.safetensors")}
    snap = _cache_repo(offline, "org/name", files)
    seen = []
    src = acquire("org/name", fits=seen.append, progress=False)
    assert src.repo_id == "org/name" and src.revision == COMMIT and src.path == snap.resolve()
    assert seen == [CONFIG]
    assert src.files == {n: hashlib.sha256(data).hexdigest() for n, data in files.items()}
    assert acquire("org/name", revision=COMMIT).revision == COMMIT


def test_offline_a_repo_missing_from_the_cache_is_named(offline):
    with pytest.raises(BaseSourceError, match="not .*in the Hugging Face cache") as e:
        acquire("Qwen/Qwen3.5-2B")
    assert "Qwen/Qwen3.5-2B" in str(e.value) and "HF_HUB_OFFLINE=1" in str(e.value)
    _cache_repo(offline, "Qwen/Qwen3.5-2B", {"config.json": json.dumps(CONFIG).encode()})
    with pytest.raises(BaseSourceError, match="Qwen/Qwen3.5-2B"):
        acquire("Qwen/Qwen3.5-2B", revision="f" * 40)  # a commit that is not cached


# --- online, the hub replaced by fakes -------------------------------------------------------------------------------


class FakeHub:
    """``model_info``, ``hf_hub_download`` and ``snapshot_download`` as a repo at ``COMMIT`` answers them."""

    def __init__(self, tmp_path: Path, names: list[str]):
        self.calls: list[tuple[str, dict]] = []
        self.names = names
        self.repo_dir = _write_base(tmp_path / "snapshot")

    def install(self, monkeypatch):
        import huggingface_hub
        from huggingface_hub import constants

        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(huggingface_hub.HfApi, "model_info", lambda api, repo, **k: self._info(repo, k))
        monkeypatch.setattr(huggingface_hub, "hf_hub_download", self._download)
        monkeypatch.setattr(huggingface_hub, "snapshot_download", self._snapshot)
        return self

    def _info(self, repo, kwargs):
        self.calls.append(("model_info", kwargs))
        return SimpleNamespace(sha=COMMIT, siblings=[SimpleNamespace(rfilename=n) for n in self.names])

    def _download(self, repo, filename, **kwargs):
        self.calls.append(("hf_hub_download", {"filename": filename, **kwargs}))
        return str(self.repo_dir / filename)

    def _snapshot(self, repo, **kwargs):
        from huggingface_hub.utils import are_progress_bars_disabled

        self.calls.append(("snapshot_download", {**kwargs, "bars_disabled": are_progress_bars_disabled()}))
        return str(self.repo_dir)

    def called(self) -> list[str]:
        return [name for name, _ in self.calls]


QWEN_FILES = ["config.json", "tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt",
              "chat_template.jinja", "model.safetensors", "README.md", "modeling_evil.py", ".gitattributes",
              "original/model.safetensors", "preprocessor_config.json"]


def test_a_repo_is_listed_then_config_then_fits_then_weights_of_the_resolved_commit(tmp_path, monkeypatch):
    from huggingface_hub.utils import are_progress_bars_disabled

    hub = FakeHub(tmp_path, QWEN_FILES).install(monkeypatch)
    order = []
    src = acquire("Qwen/Qwen3.5-0.8B", revision="main", fits=lambda c: order.append(hub.called()[:]),
                  progress=False)
    assert order == [["model_info", "hf_hub_download"]]  # fits saw the config before any weight was fetched
    assert hub.called() == ["model_info", "hf_hub_download", "snapshot_download"]
    info, config, snap = (kw for _, kw in hub.calls)
    assert info == {"revision": "main", "files_metadata": False}
    assert config["filename"] == "config.json" and config["revision"] == COMMIT
    assert snap["revision"] == COMMIT and snap["bars_disabled"] and not are_progress_bars_disabled()
    assert sorted(snap["allow_patterns"]) == ["chat_template.jinja", "config.json", "merges.txt", "model.safetensors",
                                              "tokenizer.json", "tokenizer_config.json", "vocab.json"]
    assert "trust_remote_code" not in snap
    assert src.repo_id == "Qwen/Qwen3.5-0.8B" and src.revision == COMMIT


def test_a_pickle_only_repo_is_refused_before_any_download(tmp_path, monkeypatch):
    hub = FakeHub(tmp_path, ["config.json", "pytorch_model.bin", "tokenizer.json"]).install(monkeypatch)
    with pytest.raises(BaseSourceError, match="pytorch_model.bin"):
        acquire("someone/qwen-tiny")
    assert hub.called() == ["model_info"]


def test_fits_refusing_a_repo_downloads_no_weights(tmp_path, monkeypatch):
    hub = FakeHub(tmp_path, QWEN_FILES).install(monkeypatch)

    def fits(config):
        raise Misfit("too small")

    with pytest.raises(Misfit):
        acquire("Qwen/Qwen3.5-0.8B", fits=fits)
    assert hub.called() == ["model_info", "hf_hub_download"]


def test_hub_errors_become_messages(tmp_path, monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import RepositoryNotFoundError

    FakeHub(tmp_path, QWEN_FILES).install(monkeypatch)

    def missing(api, repo, **k):
        raise RepositoryNotFoundError("404", response=SimpleNamespace(headers={}, status_code=404, request=None))

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", missing)
    with pytest.raises(BaseSourceError, match="no such repo"):
        acquire("org/absent")


# --- the manifest ----------------------------------------------------------------------------------------------------


def test_the_manifest_records_base_revision_hashes_and_extra(tmp_path, no_hub):
    d = _write_base(tmp_path / "base")
    src = acquire(str(d))
    out = tmp_path / "combined"
    path = write_manifest(src, out, {"machine": "default", "parameters": 12})
    assert path == out / "qwengpu-manifest.json"
    m = read_manifest(out)
    assert m["base"] == str(d.resolve()) and m["revision"] is None and m["machine"] == "default"
    assert m["base_files_sha256"] == {n: _sha(d / n) for n in ("config.json", "model.safetensors", "tokenizer.json")}
    with pytest.raises(ValueError, match="revision"):
        write_manifest(src, out, {"revision": "x"})
    with pytest.raises(BaseSourceError, match="no qwengpu-manifest.json"):
        read_manifest(tmp_path)
