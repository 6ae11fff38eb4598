"""The native token step (``circuit_step.cpp``): built on this machine once, then loaded.

The extension is an MLX primitive compiled against the installed MLX (its headers and
``libmlx``) with nanobind, so it is built where it runs: the first time a runner wants it,
with CMake and the system's C++ compiler, into the cache directory under a key that
names the source, MLX, nanobind, Python and the platform (a change of any builds again).
Building takes about half a minute and says so on stderr. When it cannot be built (no
CMake or compiler, an MLX without headers) or is switched off (``QWENGPU_MLX_NATIVE=0``),
:func:`load` says why and launches run on the MLX-ops path, which is the reference
anyway. A build writes into a temporary directory renamed into place, so an interrupted
build leaves nothing a later load would trust.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType
from typing import Callable

from qwengpu_mlx.runtime.circuit_cache import cache_dir

_HERE = Path(__file__).resolve().parent
_SOURCES = ("circuit_step.cpp", "mlx_math.h", "CMakeLists.txt")
MODULE = "_circuit_step"
_LOADED: dict[Path, ModuleType] = {}  # a module is imported once per process (nanobind registers its types)


@dataclass
class Native:
    """What :func:`load` found: the module, or None and the reason."""

    module: ModuleType | None
    reason: str  # why there is no module, or where it came from
    key: str  # the build key (source, versions, platform)
    just_failed: bool = False  # this call tried a build and it failed (worth saying, once)


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "none"


def build_key() -> str:
    """A hash of everything the built module depends on."""
    h = hashlib.sha256()
    for name in _SOURCES:
        h.update((_HERE / name).read_bytes())
    for part in (_version("mlx"), _version("nanobind"), sys.version, platform.platform(), platform.machine()):
        h.update(part.encode())
    return h.hexdigest()[:16]


def native_dir() -> Path:
    """Where built modules live: the cache directory's ``native`` folder."""
    return cache_dir() / "native"


def _import(folder: Path) -> ModuleType | None:
    if folder in _LOADED:
        return _LOADED[folder]
    found = sorted(folder.glob(f"{MODULE}*.so")) + sorted(folder.glob(f"{MODULE}*.pyd"))
    if not found:
        return None
    spec = importlib.util.spec_from_file_location(MODULE, found[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _LOADED[folder] = module
    return module


def key_of(module: ModuleType) -> str | None:
    """The build key of a module :func:`load` loaded (the source it was built from, which
    may no longer be the source on disk), or None for a module it did not load."""
    for folder, loaded in _LOADED.items():
        if loaded is module:
            return folder.name
    return None


def find_cmake() -> str | None:
    """``$QWENGPU_MLX_CMAKE``, else CMake on PATH, else the one pip puts beside this Python
    (``scripts/dev.sh`` installs it there when the machine has none)."""
    named = os.environ.get("QWENGPU_MLX_CMAKE")
    if named:
        return named if Path(named).is_file() else None
    beside = Path(sys.executable).parent / "cmake"
    return shutil.which("cmake") or (str(beside) if beside.is_file() else None)


def missing_tools() -> str | None:
    """What the build needs and this machine lacks (checked at once, never cached)."""
    if find_cmake() is None:
        return "no cmake (on PATH, beside Python, or named by $QWENGPU_MLX_CMAKE)"
    if importlib.util.find_spec("nanobind") is None:
        return "nanobind is not installed"
    return None


def _build(target: Path, log: Callable[[str], None]) -> str | None:
    """Configure and build into a temporary folder, then rename it to ``target``; the
    reason it failed, or None."""
    cmake = find_cmake()
    log("building the native circuit step (once for this MLX; about 30 s)")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=".build-"))
    try:
        for args in ([cmake, "-S", str(_HERE), "-B", str(work), f"-DPython_EXECUTABLE={sys.executable}",
                      "-DCMAKE_BUILD_TYPE=Release"], [cmake, "--build", str(work), "-j", "2"]):
            done = subprocess.run(args, capture_output=True, text=True)
            if done.returncode:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                return f"{Path(args[0]).name} failed: " + " / ".join(tail)
        built = sorted(work.glob(f"{MODULE}*"))
        final = Path(tempfile.mkdtemp(dir=target.parent, prefix=".ready-"))
        for f in built:
            if f.is_file():
                shutil.copy2(f, final / f.name)
        try:
            os.replace(final, target)
        except OSError:  # another process built the same key meanwhile: its module is as good
            shutil.rmtree(final, ignore_errors=True)
            if not target.is_dir():
                raise
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def load(log: Callable[[str], None] | None = None) -> Native:
    """The native module for this MLX, built first when it is missing."""
    key = build_key()
    if os.environ.get("QWENGPU_MLX_NATIVE", "1") == "0":
        return Native(None, "switched off (QWENGPU_MLX_NATIVE=0)", key)
    target = native_dir() / key
    failed_note = native_dir() / f"{key}.failed"  # a build that failed is not retried for this key
    log = log or (lambda line: print(line, file=sys.stderr))
    try:
        module = _import(target) if target.is_dir() else None
        if module is None and failed_note.is_file():
            return Native(None, failed_note.read_text().strip(), key)
        if module is None:
            lacking = missing_tools()
            if lacking:
                return Native(None, lacking, key)
            failed = _build(target, log)
            if failed:
                failed_note.write_text(failed + " (remove this file to try again)\n")
                return Native(None, failed, key, just_failed=True)
            module = _import(target)
    except (OSError, ImportError) as err:
        return Native(None, f"it does not load ({type(err).__name__}: {err})", key)
    if module is None:
        return Native(None, f"the build left no module in {target}", key)
    return Native(module, f"built at {target}", key)
