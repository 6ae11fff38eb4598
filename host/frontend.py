"""CUDA C++ -> PTX -> :class:`PtxModule`, and picking the kernel to run.

We compile with clang's CUDA device-only mode and *no* CUDA installation: our own
``prelude.h`` is force-included and supplies ``__global__``, the thread-index
variables, ``__syncthreads``, ``atomicAdd``, the shuffles and ``min``/``max`` for a
4-lane warp, so a user needs only clang (with its NVPTX back end) to compile a
kernel. nvcc can be used instead (``frontend="nvcc"``); the prelude then redirects
``warpSize`` and the shuffles to the 4-lane versions.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from qwengpu_mlx.core.errors import ClangNotFound, FrontendError
from qwengpu_mlx.host import ptx_cache
from qwengpu_mlx.host.ptx_ast import PtxKernel, PtxModule
from qwengpu_mlx.host.ptx_parser import parse_ptx

__all__ = [
    "PRELUDE",
    "GPU_ARCH",
    "PTX_FEATURE",
    "find_clang",
    "find_nvcc",
    "clang_command",
    "nvcc_command",
    "cuda_to_ptx",
    "cuda_text_to_ptx",
    "load_ptx",
    "read_source",
    "read_ptx_file",
    "MAX_SOURCE_BYTES",
    "load_module",
    "demangle_kernel_name",
    "kernel_names",
    "select_kernel",
]

PRELUDE = Path(__file__).with_name("prelude.h")
"""Force-included into every kernel (``-include``)."""

RUNTIME_HEADERS = Path(__file__).with_name("cuda_runtime")
"""On every kernel's include path (``-I``): the project's ``cuda_runtime.h`` (what a whole
program's host code calls), so a kernel file that includes it, as pasted code does,
compiles too; the device code never calls its host functions."""

GPU_ARCH = "sm_75"
PTX_FEATURE = "+ptx70"
"""The shfl.sync builtins need PTX >= 6.0; with no CUDA installation clang would
default to an older PTX version, so we ask for 7.0 (supported since clang 11)."""

# Where clang looks for a CUDA installation. We use none (-nocudainc -nocudalib);
# pointing it at a path that does not exist keeps the output independent of any
# CUDA toolkit on the machine (clang 14 otherwise warns about newer toolkits).
_NO_CUDA_PATH = "/nonexistent-qwengpu-cuda"

_CLANG_TIMEOUT_S = 120

MAX_SOURCE_BYTES = 4 << 20
"""A kernel source larger than this (4 MiB) is refused before it is read: no kernel
that fits the machine's 32-block ROM comes near it."""


def _source_bytes(path: Path, what: str) -> bytes:
    """The bytes of a source file, after checking it is a readable file of sane size."""
    if path.is_dir():
        raise FrontendError(f"{path} is a directory, not a {what} file")
    if not path.is_file():
        raise FrontendError(f"no such {what} file: {path}")
    size = path.stat().st_size
    if size > MAX_SOURCE_BYTES:
        raise FrontendError(f"{path} is {size} bytes; a {what} source may be at most {MAX_SOURCE_BYTES} bytes")
    try:
        return path.read_bytes()
    except OSError as e:
        raise FrontendError(f"cannot read {path}: {e.strerror or e}") from e


def read_source(path: str | Path) -> str:
    """A CUDA source as text for the host's own scans (parameter names).

    clang reads the bytes itself and accepts any bytes in comments, so we never
    refuse what it accepts: UTF-8 where it decodes, else Latin-1 (every byte a character).
    """
    data = _source_bytes(Path(path), "CUDA source")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_ptx_file(path: str | Path) -> str:
    """A ``.ptx`` file's text: PTX is ASCII (UTF-8 in comments), so anything else is an error."""
    path = Path(path)
    data = _source_bytes(path, "PTX")
    if b"\0" in data:
        raise FrontendError(f"{path} is a binary file (it holds NUL bytes), not PTX text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FrontendError(f"{path} is not PTX text: byte 0x{data[e.start]:02x} at offset {e.start} is not "
                            f"UTF-8 (PTX is ASCII; save the file as UTF-8)") from e


def _install_hint() -> str:
    if sys.platform == "darwin":
        return (
            "install LLVM's clang with `brew install llvm` (Apple's clang has no NVPTX back end) "
            "and set QWENGPU_CLANG=$(brew --prefix llvm)/bin/clang"
        )
    if sys.platform.startswith("linux"):
        return "install it with `apt-get install clang` (Debian/Ubuntu) or your distribution's clang package"
    return "install clang with NVPTX support (`apt-get install clang` on Debian/Ubuntu, `brew install llvm` on macOS)"


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _versioned_clangs() -> list[str]:
    """``clang-NN`` executables on PATH, newest first."""
    found: dict[int, str] = {}
    for d in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = os.listdir(d or ".")
        except OSError:
            continue
        for n in names:
            m = re.fullmatch(r"clang-(\d+)", n)
            if m and int(m.group(1)) not in found and _executable(os.path.join(d, n)):
                found[int(m.group(1))] = os.path.join(d, n)
    return [found[v] for v in sorted(found, reverse=True)]


def find_clang() -> str:
    """The clang to compile with: ``$QWENGPU_CLANG``, else ``clang``, else ``clang-NN``.

    On macOS Homebrew's LLVM comes before ``clang`` on PATH, because Apple's clang
    cannot target NVPTX. Raises :class:`ClangNotFound` with an install hint.
    """
    env = os.environ.get("QWENGPU_CLANG")
    if env:
        path = env if os.sep in env else shutil.which(env)
        if path and _executable(path):
            return path
        raise ClangNotFound(f"QWENGPU_CLANG={env!r} is not an executable clang; {_install_hint()}")
    candidates: list[str] = []
    if sys.platform == "darwin":
        candidates += ["/opt/homebrew/opt/llvm/bin/clang", "/usr/local/opt/llvm/bin/clang"]
    which = shutil.which("clang")
    if which:
        candidates.append(which)
    candidates += _versioned_clangs()
    for c in candidates:
        if _executable(c):
            return c
    raise ClangNotFound(f"clang was not found (needed to compile CUDA to PTX); {_install_hint()}")


def find_nvcc() -> str:
    """``$QWENGPU_NVCC``, else ``nvcc`` on PATH, else ``/usr/local/cuda/bin/nvcc``."""
    env = os.environ.get("QWENGPU_NVCC")
    if env:
        path = env if os.sep in env else shutil.which(env)
        if path and _executable(path):
            return path
        raise FrontendError(f"QWENGPU_NVCC={env!r} is not an executable nvcc")
    for c in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and _executable(c):
            return c
    raise FrontendError("nvcc was not found; install the CUDA toolkit or use the clang front end")


def clang_command(clang: str, source: Path, output: str = "-") -> list[str]:
    """The clang command line: device-only CUDA for sm_75, no CUDA headers/libdevice."""
    return [
        clang,
        "-x", "cuda",
        "--cuda-device-only",
        f"--cuda-gpu-arch={GPU_ARCH}",
        "-nocudainc",
        "-nocudalib",
        f"--cuda-path={_NO_CUDA_PATH}",
        "-Xclang", "-target-feature", "-Xclang", PTX_FEATURE,
        "-O2",
        "-gline-tables-only",  # .loc lines: errors name the .cu line (the code is the same)
        "-S",
        "-fno-color-diagnostics",
        "-include", str(PRELUDE),
        "-I", str(RUNTIME_HEADERS),
        "-o", output,
        str(source),
    ]  # fmt: skip


def nvcc_command(nvcc: str, source: Path, output: Path) -> list[str]:
    """nvcc's own headers come in implicitly; the prelude then redefines the 4-lane names."""
    return [nvcc, "-ptx", f"-arch={GPU_ARCH}", "-lineinfo", "-include", str(PRELUDE), "-o", str(output), str(source)]


def _run(cmd: list[str], tool: str, source: Path) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=_CLANG_TIMEOUT_S)
        # the tools' output is ASCII PTX and diagnostics that quote the source's own bytes
        return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                                           proc.stderr.decode("utf-8", "replace"))
    except FileNotFoundError as e:
        if tool == "clang":
            raise ClangNotFound(f"cannot run {cmd[0]}: {e}; {_install_hint()}") from e
        raise FrontendError(f"cannot run {cmd[0]}: {e}") from e
    except subprocess.TimeoutExpired as e:
        raise FrontendError(f"{tool} took longer than {_CLANG_TIMEOUT_S}s on {source}") from e


_CRASH_RE = re.compile(r"PLEASE submit a bug report|Stack dump:|clang frontend command failed|"
                       r"error: unable to execute command|LLVM ERROR", re.IGNORECASE)
_NO_TARGET_RE = re.compile(r"unknown target|No available targets|unable to create target|"
                           r"target .*nvptx.* (is )?not (supported|registered)", re.IGNORECASE)


def _non_ascii_identifiers(source: Path) -> list[str]:
    """Identifiers with non-ASCII letters in the source (comments and strings aside)."""
    try:
        text = _source_bytes(source, "CUDA source").decode("utf-8", "replace")
    except FrontendError:
        return []
    text = re.sub(r"/\*.*?\*/|//[^\n]*|\"(?:[^\"\\\n]|\\.)*\"", " ", text, flags=re.S)
    return sorted({w for w in re.findall(r"[^\W\d]\w*", text) if not w.isascii()})


def _compile_error(tool: str, source: Path, stderr: str) -> FrontendError:
    """The compiler's diagnostics, with a hint only where we know the cause."""
    text = stderr.strip() or "(no diagnostics)"
    hint = ""
    if _CRASH_RE.search(text):
        names = _non_ascii_identifiers(source) if source.suffix != ".ptx" else []
        if names:
            hint = (f"\n({tool} crashed: its PTX back end cannot emit non-ASCII identifiers such as "
                    f"{', '.join(repr(n) for n in names[:3])}; give kernels, device functions and "
                    f"__shared__ variables ASCII names)")
        else:
            hint = f"\n({tool} crashed while compiling; its diagnostics are above)"
    elif _NO_TARGET_RE.search(text):
        hint = f"\n(this clang seems to lack the NVPTX back end; {_install_hint()})"
    return FrontendError(f"{tool} could not compile {source}:\n{text}{hint}")


def _clang_ptx(command: list[str], path: Path, deps_file: str) -> str:
    """clang's PTX; with ``deps_file``, clang also lists there every file it read (``-MD``,
    for the PTX cache's check), the same compile."""
    proc = _run(command + (["-MD", "-MF", deps_file] if deps_file else []), "clang", path)
    if proc.returncode != 0:
        raise _compile_error("clang", path, proc.stderr)
    return proc.stdout


def cuda_to_ptx(source: str | Path, *, frontend: str = "clang") -> str:
    """Compile the CUDA file at ``source`` to PTX text with the prelude force-included.

    Compile errors raise :class:`FrontendError` carrying the compiler's diagnostics
    (``file.cu:LINE:COL: error: ...``) unchanged.
    """
    path = Path(source)
    _source_bytes(path, "CUDA source")  # a file, readable, of sane size
    if frontend == "clang":
        command = clang_command(find_clang(), path)
        return ptx_cache.cached_compile(command, path, lambda deps: _clang_ptx(command, path, deps))
    if frontend == "nvcc":
        nvcc = find_nvcc()
        with tempfile.TemporaryDirectory(prefix="qwengpu-nvcc-") as tmp:
            out = Path(tmp) / (path.stem + ".ptx")
            proc = _run(nvcc_command(nvcc, path, out), "nvcc", path)
            if proc.returncode != 0 or not out.is_file():
                raise _compile_error("nvcc", path, proc.stderr + proc.stdout)
            return out.read_text()
    raise FrontendError(f"unknown front end {frontend!r} (use 'clang' or 'nvcc')")


def cuda_text_to_ptx(code: str, filename: str = "kernel.cu", *, frontend: str = "clang") -> str:
    """Compile CUDA source text; diagnostics name ``filename``."""
    with tempfile.TemporaryDirectory(prefix="qwengpu-cu-") as tmp:
        path = Path(tmp) / Path(filename).name
        path.write_text(code)
        return cuda_to_ptx(path, frontend=frontend)


def load_ptx(path_or_text: str | Path) -> PtxModule:
    """Parse a ``.ptx`` file (a Path, or a str naming a file) or PTX text (a str holding it)."""
    if isinstance(path_or_text, Path) or ("\n" not in path_or_text and ".entry" not in path_or_text):
        return parse_ptx(read_ptx_file(path_or_text))
    return parse_ptx(path_or_text)


def load_module(source: str | Path, *, frontend: str = "clang") -> PtxModule:
    """A ``.ptx`` file is parsed as is; anything else is compiled as CUDA first."""
    path = Path(source)
    if path.suffix == ".ptx":
        return load_ptx(path)
    return parse_ptx(cuda_to_ptx(path, frontend=frontend))


# ------------------------------------------------------------------------ kernel names


def demangle_kernel_name(mangled: str) -> str:
    """``_Z6reducePiPKi`` -> ``reduce``; ``_ZN2ns3fooEPi`` -> ``ns::foo``.

    Only the (possibly nested) function name is recovered, which is all kernel
    selection needs; names that are not Itanium-mangled (``extern "C"``) are returned
    unchanged.
    """
    if not mangled.startswith("_Z"):
        return mangled
    s, i = mangled, 2
    if s.startswith("L", i):  # internal linkage (static)
        i += 1
    nested = s.startswith("N", i)
    if nested:
        i += 1
        while i < len(s) and s[i] in "rVKO":  # cv / ref qualifiers of member functions
            i += 1
    parts: list[str] = []
    while i < len(s) and s[i].isdigit():
        j = i
        while j < len(s) and s[j].isdigit():
            j += 1
        n = int(s[i:j])
        if n == 0 or j + n > len(s):
            return mangled
        parts.append(s[j : j + n])
        i = j + n
        if not nested:
            break
        if i < len(s) and s[i] == "I":  # template args of a nested component: skip
            break
    return "::".join(parts) if parts else mangled


def kernel_names(module: PtxModule) -> list[str]:
    """The kernels' unmangled names, in PTX order."""
    return [demangle_kernel_name(k.name) for k in module.kernels]


def select_kernel(module: PtxModule, name: str | None) -> PtxKernel:
    """The kernel called ``name`` (unmangled, or as in the PTX); the only one if None."""
    kernels = [k for k in module.kernels if k.body]  # not bare .entry prototypes
    if not kernels:
        raise FrontendError("the module has no kernels (no __global__ function)")
    available = ", ".join(demangle_kernel_name(k.name) for k in kernels)
    if name is None:
        if len(kernels) == 1:
            return kernels[0]
        raise FrontendError(f"the module has {len(kernels)} kernels; name the one to run: {available}")
    exact = [k for k in kernels if k.name == name]
    if exact:
        return exact[0]
    matches = [
        k
        for k in kernels
        if demangle_kernel_name(k.name) == name or demangle_kernel_name(k.name).split("::")[-1] == name
    ]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        mangled = ", ".join(k.name for k in matches)
        raise FrontendError(f"kernel name {name!r} is ambiguous (overloads: {mangled}); give the mangled name")
    raise FrontendError(f"no kernel named {name!r}; available kernels: {available}")
