"""Where a base checkpoint comes from: a local directory or a Hugging Face repo, checked.

What is checked: only safetensors weights are read (a repo or directory offering only
pickle files is refused: unpickling runs code); no repository code ever runs (nothing
here passes ``trust_remote_code``, and no ``*.py`` file is even fetched); a repo's
revision is resolved to a commit hash before anything is fetched, so every file comes
from that one commit, and that hash and the SHA-256 of every file read go into the
manifest of the combined checkpoint. The fit check runs on ``config.json`` alone,
before any weight is downloaded: a base the circuit does not fit costs a few kilobytes,
not gigabytes. With ``HF_HUB_OFFLINE=1`` only the local cache is used, with no network
call at all. What is NOT checked: who published the repo, or what the weights do (see
the README).

The order, for a repo: file list and commit (``model_info``) -> pickle refusal ->
``config.json`` alone -> ``fits`` -> the weights and tokenizer of that commit -> the
same directory checks a local base gets -> SHA-256 of every file read.
"""

from __future__ import annotations

import glob
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Callable, Iterator

import huggingface_hub
from huggingface_hub import constants
from huggingface_hub.errors import (GatedRepoError, HFValidationError, HfHubHTTPError, LocalEntryNotFoundError,
                                    RepositoryNotFoundError, RevisionNotFoundError)
from huggingface_hub.utils import (are_progress_bars_disabled, disable_progress_bars, enable_progress_bars,
                                   validate_repo_id)

from qwengpu_mlx.core.hashing import file_sha256

MANIFEST = "qwengpu-manifest.json"
CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
# What Qwen3.5 and mlx-community repos carry for the text model and its tokenizer
# (``tokenizer.py`` copies these); image/video preprocessor configs are not read.
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt",
                   "generation_config.json", "chat_template.jinja", "chat_template.json"]
WEIGHT_PATTERNS = ["*.safetensors", INDEX]
ALLOW_PATTERNS = [CONFIG, *TOKENIZER_FILES, *WEIGHT_PATTERNS]
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
_TRUE = ("1", "true", "yes", "on")  # huggingface_hub's own truthy spellings


class BaseSourceError(ValueError):
    """A base that cannot be used: missing, pickle-only, incomplete, not cached while offline.

    Its message is for a person (the CLI prints it and exits 2); nothing matches on it."""


@dataclass(frozen=True)
class BaseSource:
    """A base checkpoint on local disk, and what it is: enough to reproduce and to audit it."""

    path: Path  # local directory holding the files read (a cache snapshot for a repo)
    repo_id: str | None  # None for a local directory
    revision: str | None  # the commit hash a repo resolved to; None for a directory
    files: dict[str, str] = field(default_factory=dict)  # relative path -> sha256 of every file read
    config: dict = field(default_factory=dict)  # the base's config.json

    @property
    def label(self) -> str:
        """How a person names this base: ``repo@commit`` or the directory."""
        if self.repo_id is None:
            return str(self.path)
        return f"{self.repo_id}@{(self.revision or '?')[:12]}"


# --- what a base offers ----------------------------------------------------------------------------------------------


def _wanted(names: list[str]) -> list[str]:
    """The files the build reads, out of a base's listing: top level only, as mlx-lm loads them.

    Matching at the top level (fnmatch's ``*`` would cross ``/``) keeps stray weights in
    subfolders (``original/``, other formats) from being downloaded and hashed for nothing."""
    top = [n for n in names if "/" not in n]
    return sorted(n for n in top if any(fnmatchcase(n, p) for p in ALLOW_PATTERNS))


def _check_listing(names: list[str], where: str) -> list[str]:
    """Refuse a base without ``config.json`` or safetensors weights; return the files to read.

    A pickle-only base is refused naming its pickle files: loading them can run code."""
    if CONFIG not in names:
        raise BaseSourceError(f"{where} has no {CONFIG}: not a Hugging Face model (files: {_sample(names)})")
    wanted = _wanted(names)
    if any(n.endswith(".safetensors") for n in wanted):
        return wanted
    pickles = sorted(n for n in names if n.endswith(PICKLE_SUFFIXES))
    if pickles:
        raise BaseSourceError(f"{where} offers only pickle weights ({_sample(pickles)}); pickle files can run code "
                              f"when loaded, so only *.safetensors are read. Use a safetensors conversion (the "
                              f"official Qwen repos and mlx-community carry them)")
    raise BaseSourceError(f"{where} has no *.safetensors weights (files: {_sample(names)})")


def _sample(names: list[str], n: int = 6) -> str:
    """A few names for a message, and how many more there are."""
    names = sorted(names)
    more = f", ... ({len(names) - n} more)" if len(names) > n else ""
    return (", ".join(names[:n]) or "none") + more


def _listing(directory: Path) -> list[str]:
    """Every file under ``directory`` as a relative POSIX path, hidden folders (.git, .cache) left out."""
    out = []
    for p in directory.rglob("*"):
        rel = p.relative_to(directory)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            out.append(rel.as_posix())
    return sorted(out)


def _read_config(path: Path, where: str) -> dict:
    """``config.json`` as a dict, or a clear refusal when it is not JSON."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BaseSourceError(f"{where}: cannot read {CONFIG} ({e})") from None
    if not isinstance(config, dict):
        raise BaseSourceError(f"{where}: {CONFIG} is not a JSON object")
    return config


def _check_shards(directory: Path, names: list[str], where: str) -> None:
    """Refuse a sharded base missing a shard its index names (an interrupted download, a partial copy)."""
    if INDEX not in names:
        return
    index = _read_json(directory / INDEX, where)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        raise BaseSourceError(f"{where}: {INDEX} has no weight_map")
    missing = sorted(set(weight_map.values()) - set(names))
    if missing:
        raise BaseSourceError(f"{where} is incomplete: {INDEX} names shards that are not there ({_sample(missing)})")


def _read_json(path: Path, where: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BaseSourceError(f"{where}: cannot read {path.name} ({e})") from None


def _sha256(path: Path) -> str:
    """SHA-256 of a file's content (through symlinks)."""
    return file_sha256(path)


def _from_directory(directory: Path, fits: Callable[[dict], None] | None, *, repo_id: str | None = None,
                    revision: str | None = None, where: str | None = None, hashes: bool = True) -> BaseSource:
    """A base already on disk: the checks, ``fits`` on its config, then the hashes of what is read
    (``hashes=False``: none, for a caller that writes no manifest; seconds a gigabyte saved)."""
    where = where or str(directory)
    names = _listing(directory)
    wanted = _check_listing(names, where)
    config = _read_config(directory / CONFIG, where)
    if fits is not None:
        fits(config)  # before any weight file is opened
    _check_shards(directory, names, where)
    files = {n: _sha256(directory / n) for n in wanted} if hashes else {}
    return BaseSource(directory.resolve(), repo_id, revision, files, config)


# --- the Hugging Face hub ----------------------------------------------------------------------------------------


def _offline() -> bool:
    """``HF_HUB_OFFLINE`` now (huggingface_hub reads it once, at import; a caller may set it later)."""
    return constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def _hub_cache() -> str:
    """The hub cache folder now, by huggingface_hub's rules (its constant is fixed at import)."""
    env = os.environ
    if env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE"):
        return os.path.expanduser(env.get("HF_HUB_CACHE") or env["HUGGINGFACE_HUB_CACHE"])
    if env.get("HF_HOME"):
        return os.path.join(os.path.expanduser(env["HF_HOME"]), "hub")
    xdg = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "huggingface", "hub")


@contextmanager
def _progress_bars(enabled: bool) -> Iterator[None]:
    """huggingface_hub's own tqdm bars while downloading, or none; the caller's setting restored after."""
    if enabled:
        yield
        return
    was_disabled = are_progress_bars_disabled()
    if not was_disabled:
        disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            enable_progress_bars()


def _transport_errors() -> tuple:
    """The HTTP client's connection and timeout errors (httpx2 for huggingface_hub 2.x, httpx for 1.x)."""
    errors: list = [ConnectionError, TimeoutError]
    for module in ("httpx2", "httpx"):
        try:
            errors.append(__import__(module).TransportError)
        except (ImportError, AttributeError):
            pass
    return tuple(errors)


def _hub_call(fn: Callable, repo: str, revision: str | None):
    """Run one hub call, its failures turned into a message that says what to do."""
    try:
        return fn()
    except RevisionNotFoundError:
        raise BaseSourceError(f"{repo} has no revision {revision!r} on the Hugging Face hub") from None
    except GatedRepoError:
        raise BaseSourceError(f"{repo} is gated: accept its terms on huggingface.co and log in "
                              f"(`hf auth login`)") from None
    except RepositoryNotFoundError:
        raise BaseSourceError(f"{repo}: no such repo on the Hugging Face hub (or it is private and you are not "
                              f"logged in)") from None
    except LocalEntryNotFoundError:
        raise BaseSourceError(f"{repo}: the Hugging Face hub could not be reached and the files are not in the "
                              f"cache ({_hub_cache()})") from None
    except HfHubHTTPError as e:
        raise BaseSourceError(f"{repo}: the Hugging Face hub refused ({e})") from None
    except _transport_errors() as e:
        raise BaseSourceError(f"{repo}: cannot reach the Hugging Face hub ({type(e).__name__}); check the network, "
                              f"or set HF_HUB_OFFLINE=1 to use the local cache only") from None


def _from_hub(repo: str, revision: str | None, fits: Callable[[dict], None] | None, hashes: bool = True) -> BaseSource:
    """A repo fetched: file list and commit first, config alone, ``fits``, then that commit's files."""
    cache = _hub_cache()
    info = _hub_call(lambda: huggingface_hub.HfApi().model_info(repo, revision=revision, files_metadata=False), repo, revision)
    commit = info.sha
    where = f"{repo}@{commit[:12]}"
    wanted = _check_listing([s.rfilename for s in info.siblings or []], where)
    config_path = _hub_call(lambda: huggingface_hub.hf_hub_download(repo, CONFIG, revision=commit, cache_dir=cache), repo, revision)
    if fits is not None:
        fits(_read_config(Path(config_path), where))  # before a single weight byte is downloaded
    patterns = [glob.escape(n) for n in wanted]  # exactly the files checked above, from that commit
    folder = _hub_call(lambda: huggingface_hub.snapshot_download(repo, revision=commit, allow_patterns=patterns, cache_dir=cache),
                       repo, revision)
    return _from_directory(Path(folder), None, repo_id=repo, revision=commit, where=where, hashes=hashes)


def _from_cache(repo: str, revision: str | None, fits: Callable[[dict], None] | None,
                hashes: bool = True) -> BaseSource:
    """Offline: the cached snapshot of ``revision`` (default: the cached ``main``), no network call.

    The snapshot folder's name is the commit hash it holds (the cache's layout)."""
    cache = _hub_cache()
    try:
        folder = Path(huggingface_hub.snapshot_download(repo, revision=revision, allow_patterns=ALLOW_PATTERNS,
                                        local_files_only=True, cache_dir=cache))
    except LocalEntryNotFoundError:  # IncompleteSnapshotError is one too
        at = f" at revision {revision!r}" if revision else ""
        raise BaseSourceError(f"{repo}{at} is not (completely) in the Hugging Face cache ({cache}) and offline mode "
                              f"is on (HF_HUB_OFFLINE=1): download it once online, or pass a local directory") from None
    where = f"{repo}@{folder.name[:12]} (cached; offline)"
    return _from_directory(folder, fits, repo_id=repo, revision=folder.name, where=where, hashes=hashes)


def _is_repo_id(base: str) -> bool:
    """Whether ``base`` can name a hub repo (``owner/name``): otherwise it was meant as a path."""
    if base.startswith((".", "/", "~")) or base.count("/") != 1:
        return False
    try:
        validate_repo_id(base)
    except HFValidationError:
        return False
    return True


# --- the API -----------------------------------------------------------------------------------------------------


def acquire(base: str, *, revision: str | None = None, fits: Callable[[dict], None] | None = None,
            progress: bool = True, hashes: bool = True) -> BaseSource:
    """A base checkpoint on local disk, checked: a directory as it is, a repo id fetched (or cached).

    ``fits(config)`` sees the base's ``config.json`` before any weight is read or
    downloaded and refuses by raising (its error propagates). An existing directory
    wins over a repo id of the same spelling."""
    path = Path(base).expanduser()
    if path.is_dir():
        if revision is not None:
            raise BaseSourceError(f"--revision names a commit of a hub repo; {base} is a local directory")
        return _from_directory(path, fits, hashes=hashes)
    if not _is_repo_id(base):
        raise BaseSourceError(f"--base {base}: neither a directory nor a Hugging Face repo id (owner/name)")
    with _progress_bars(progress):
        if _offline():
            return _from_cache(base, revision, fits, hashes)
        return _from_hub(base, revision, fits, hashes)


def write_manifest(source: BaseSource, out_dir: Path, extra: dict) -> Path:
    """Record where the base came from (repo or directory, commit, every file's SHA-256) beside the checkpoint.

    ``extra`` is the caller's (machine, sizes); it may not overwrite the provenance keys."""
    record = {"base": source.repo_id or str(Path(source.path).resolve()), "revision": source.revision,
              "base_files_sha256": dict(sorted(source.files.items()))}
    clash = sorted(set(record) & set(extra))
    if clash:
        raise ValueError(f"write_manifest: extra may not set {', '.join(clash)}")
    path = Path(out_dir) / MANIFEST
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**record, **extra}, indent=2) + "\n")
    return path


def read_manifest(out_dir: Path) -> dict:
    """The manifest ``write_manifest`` wrote into ``out_dir``, or a clear refusal."""
    path = Path(out_dir) / MANIFEST
    if not path.is_file():
        raise BaseSourceError(f"{out_dir} has no {MANIFEST}: not written by `qwengpu-mlx build --base`")
    record = _read_json(path, str(out_dir))
    if not isinstance(record, dict):
        raise BaseSourceError(f"{path} is not a JSON object")
    return record
