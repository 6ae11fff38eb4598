"""Where a base checkpoint comes from: a local directory or a Hugging Face repo, checked.

What is checked: only safetensors weights are read (a repo or directory offering only
pickle files is refused: unpickling runs code); no repository code ever runs (no
``trust_remote_code``); a repo's revision is resolved to a commit hash before anything
is fetched, and that hash and the SHA-256 of every file read go into the manifest of
the combined checkpoint. The fit check runs on ``config.json`` alone, before any weight
is downloaded. With ``HF_HUB_OFFLINE=1`` only the local cache is used. What is NOT
checked: who published the repo, or what the weights do (see the README).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

MANIFEST = "qwengpu-manifest.json"
CONFIG = "config.json"
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt",
                   "generation_config.json", "chat_template.jinja", "chat_template.json"]
WEIGHT_PATTERNS = ["*.safetensors", "model.safetensors.index.json"]
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")


class BaseSourceError(ValueError):
    """A base that cannot be used: missing, pickle-only, not cached while offline."""


@dataclass(frozen=True)
class BaseSource:
    path: Path  # local directory holding the files read
    repo_id: str | None  # None for a local directory
    revision: str | None  # the commit hash a repo resolved to
    config: dict
    files: dict[str, str] = field(default_factory=dict)  # relative path -> sha256


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _refuse_pickle_only(names: list[str], where: str) -> None:
    """Refuse a base whose weights exist only as pickle files."""
    if any(n.endswith(".safetensors") for n in names):
        return
    pickles = [n for n in names if n.endswith(PICKLE_SUFFIXES)]
    if pickles:
        raise BaseSourceError(f"{where} offers only pickle weights ({', '.join(sorted(pickles)[:4])}); pickle files "
                              f"can run code when loaded, so only safetensors are read. Use a safetensors "
                              f"conversion (e.g. an mlx-community repo)")
    raise BaseSourceError(f"{where} has no *.safetensors weights")


def _hashed(path: Path) -> dict[str, str]:
    """SHA-256 of every file the build reads from ``path``."""
    wanted = [CONFIG, *TOKENIZER_FILES]
    names = sorted(p.name for p in path.iterdir() if p.is_file())
    keep = [n for n in names if n in wanted or n.endswith(".safetensors") or n == "model.safetensors.index.json"]
    return {n: _sha256(path / n) for n in keep}


def _read_config(path: Path, where: str) -> dict:
    cfg = path / CONFIG
    if not cfg.is_file():
        raise BaseSourceError(f"{where} has no {CONFIG}")
    return json.loads(cfg.read_text())


def _from_directory(path: Path, fits: Callable[[dict], None] | None) -> BaseSource:
    config = _read_config(path, str(path))
    if fits is not None:
        fits(config)
    _refuse_pickle_only([p.name for p in path.iterdir()], str(path))
    return BaseSource(path.resolve(), None, None, config, _hashed(path))


def _from_repo(repo: str, revision: str | None, fits: Callable[[dict], None] | None, progress: bool) -> BaseSource:
    from huggingface_hub import HfApi, hf_hub_download, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError
    from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

    offline = _offline()
    (enable_progress_bars if progress else disable_progress_bars)()
    try:
        if offline:
            local = Path(snapshot_download(repo, revision=revision, local_files_only=True))
            commit = local.name
        else:
            info = HfApi().model_info(repo, revision=revision)
            commit = info.sha
            _refuse_pickle_only([s.rfilename for s in info.siblings or []], f"repo {repo}")
            cfg_path = Path(hf_hub_download(repo, CONFIG, revision=commit))
            if fits is not None:
                fits(json.loads(cfg_path.read_text()))
            local = Path(snapshot_download(repo, revision=commit, allow_patterns=[CONFIG, *TOKENIZER_FILES,
                                                                                    *WEIGHT_PATTERNS]))
    except LocalEntryNotFoundError:
        raise BaseSourceError(f"{repo} is not in the local Hugging Face cache and HF_HUB_OFFLINE=1 forbids "
                              f"downloading it") from None
    config = _read_config(local, f"repo {repo}")
    if offline and fits is not None:
        fits(config)
    _refuse_pickle_only([p.name for p in local.iterdir()], f"repo {repo}")
    return BaseSource(local, repo, commit, config, _hashed(local))


def acquire(base: str, *, revision: str | None = None, fits: Callable[[dict], None] | None = None,
            progress: bool = True) -> BaseSource:
    """A base checkpoint on local disk, checked: a directory as it is, a repo id fetched."""
    path = Path(base).expanduser()
    if path.is_dir():
        return _from_directory(path, fits)
    if path.exists() or base.startswith((".", "/", "~")) or base.count("/") != 1:
        raise BaseSourceError(f"--base {base}: neither a directory nor a Hugging Face repo id (owner/name)")
    return _from_repo(base, revision, fits, progress)


def write_manifest(source: BaseSource, out_dir: Path, extra: dict) -> Path:
    """Record where the base came from (repo, commit, every file's SHA-256) beside the checkpoint."""
    record = {"base": source.repo_id or str(source.path), "revision": source.revision,
              "base_files_sha256": source.files, **extra}
    path = Path(out_dir) / MANIFEST
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path


def read_manifest(out_dir: Path) -> dict:
    return json.loads((Path(out_dir) / MANIFEST).read_text())
