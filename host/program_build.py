"""A whole CUDA program (a ``.cu`` file with ``main()``) compiled twice by clang, as nvcc does.

* The device side, as for a single kernel (``frontend.clang_command``): every
  ``__global__`` function to PTX, parsed once; the ``__device__``/``__constant__``
  variables and their initial bytes taken apart (``program_symbols``). Each launch binds
  a kernel to device memory later (``program_lowering``).
* The host side natively: ``--cuda-host-only`` with the project's ``cuda_runtime.h``
  (``host/cuda_runtime/``) on the include path in place of NVIDIA's, linked with its
  runtime (``qwengpu_cuda_runtime.cpp``). clang lowers ``k<<<g, b, s>>>(...)`` itself
  (``__cudaPushCallConfiguration`` and a stub calling ``cudaLaunchKernel``), and
  registers each kernel stub and variable in a module constructor, which it emits only
  for a GPU binary: we give it a stand-in file (``-fcuda-include-gpubinary``); the
  runtime ignores it and learns the device names from the registration calls.
  ``-target-sdk-version`` tells clang the CUDA API is 9.2 or newer (the launch lowering
  above rather than the old ``cudaConfigureCall``); both sides need it, since both
  parse ``main``.

Nothing of the host code is interpreted: it is the user's C++ compiled by clang.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from qwengpu_mlx.core.errors import FrontendError
from qwengpu_mlx.host.frontend import PRELUDE, clang_command, demangle_kernel_name, find_clang, read_source
from qwengpu_mlx.host.ptx_ast import PtxKernel, PtxModule
from qwengpu_mlx.host.ptx_parser import parse_ptx
from qwengpu_mlx.host.program_printf import rewrite_printf
from qwengpu_mlx.host.program_symbols import DeviceVariable, split_initializers
from qwengpu_mlx.host.signature import KernelParam, cuda_kernel_params, ptx_param_name

RUNTIME_DIR = Path(__file__).with_name("cuda_runtime")
"""The project's ``cuda_runtime.h`` (and ``cuda.h``) and the runtime source linked into programs."""

RUNTIME_SOURCE = RUNTIME_DIR / "qwengpu_cuda_runtime.cpp"

RUNTIME_HEADER = RUNTIME_DIR / "cuda_runtime.h"
"""Force-included on both sides, as nvcc includes NVIDIA's: a program need not include it."""

CUDA_SDK_VERSION = "11.0"
_NO_CUDA_PATH = "/nonexistent-qwengpu-cuda"
_BUILD_TIMEOUT_S = 180

_MAIN_RE = re.compile(r"\bmain\s*\([^;{)]*\)\s*\{")


def has_main(path: str | Path) -> bool:
    """Whether the file defines ``main`` (comments and strings aside): a program, not a kernel file."""
    text = read_source(path)
    text = re.sub(r"/\*.*?\*/|//[^\n]*|\"(?:[^\"\\\n]|\\.)*\"", " ", text, flags=re.S)
    return bool(_MAIN_RE.search(text))


@dataclass
class DeviceCode:
    """The program's device side: its PTX module, its device variables, its source text."""

    path: Path
    ptx: str
    module: PtxModule
    variables: list[DeviceVariable]
    cuda: str

    def kernel(self, mangled: str) -> PtxKernel | None:
        return next((k for k in self.module.kernels if k.name == mangled and k.body), None)

    def params(self, kernel: PtxKernel) -> list[KernelParam]:
        """The kernel's parameters as its source declares them (else as the PTX types them)."""
        found = cuda_kernel_params(self.cuda, demangle_kernel_name(kernel.name))
        if found is None or len(found) != len(kernel.params):
            found = [KernelParam(ptx_param_name(p.name), p.type in ("u64", "b64", "s64"), p.type)
                     for p in kernel.params]
        return found


def _run(cmd: list[str], what: str, path: Path) -> bytes:
    """clang's output; its diagnostics as the error when it fails."""
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=_BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        raise FrontendError(f"clang took longer than {_BUILD_TIMEOUT_S}s compiling {what} of {path}") from e
    if proc.returncode != 0:
        text = proc.stderr.decode("utf-8", "replace").strip() or "(no diagnostics)"
        raise FrontendError(f"clang could not compile {what} of {path}:\n{text}")
    return proc.stdout


def compile_device(path: str | Path) -> DeviceCode:
    """Every kernel of the program to PTX, parsed; its device variables apart."""
    path = Path(path)
    cuda = read_source(path)
    cmd = clang_command(find_clang(), path)
    extra = ["-I", str(RUNTIME_DIR), "-include", str(RUNTIME_HEADER),
             "-Xclang", f"-target-sdk-version={CUDA_SDK_VERSION}"]
    cmd = cmd[:-1] + extra + cmd[-1:]
    ptx = rewrite_printf(_run(cmd, "the device code", path).decode("utf-8", "replace"))
    ptx, variables = split_initializers(ptx)
    return DeviceCode(path, ptx, parse_ptx(ptx), variables, cuda)


def runtime_command(clang: str, obj: Path) -> list[str]:
    """clang++ compiling the runtime (plain C++: it is host code only) to ``obj``."""
    return [clang, "--driver-mode=g++", "-x", "c++", "-std=c++17", "-O1", "-c", "-I", str(RUNTIME_DIR),
            str(RUNTIME_SOURCE), "-o", str(obj)]


def host_command(clang: str, source: Path, workdir: Path, runtime: Path, executable: Path) -> list[str]:
    """clang++ compiling the host side of ``source``, linked with the runtime into ``executable``."""
    stand_in = workdir / "device-code.stand-in"
    stand_in.write_bytes(b"qwengpu-mlx: kernels run in the qwengpu-mlx process\0")
    return [
        clang, "--driver-mode=g++",
        "-x", "cuda", "--cuda-host-only", "-nocudainc", "-nocudalib", f"--cuda-path={_NO_CUDA_PATH}",
        "-Xclang", f"-target-sdk-version={CUDA_SDK_VERSION}",
        "-Xclang", "-fcuda-include-gpubinary", "-Xclang", str(stand_in),
        "-include", str(PRELUDE), "-include", str(RUNTIME_HEADER), "-I", str(RUNTIME_DIR),
        "-O1", "-fno-color-diagnostics", "-Wno-unknown-cuda-version",
        str(source),
        "-x", "none", str(runtime),
        "-o", str(executable), "-lm",
    ]  # fmt: skip


_RUNTIME_OBJECTS: dict[tuple[str, bytes], Path] = {}
_RUNTIME_DIR: list[tempfile.TemporaryDirectory] = []  # removed when the process ends


def runtime_object(clang: str) -> Path:
    """The runtime compiled once per process (and per clang and source): each program
    links the same object, in a directory removed when the process exits."""
    key = (clang, hashlib.sha256(RUNTIME_SOURCE.read_bytes() + RUNTIME_HEADER.read_bytes()).digest())
    if key not in _RUNTIME_OBJECTS:
        if not _RUNTIME_DIR:
            _RUNTIME_DIR.append(tempfile.TemporaryDirectory(prefix="qwengpu-cuda-runtime-"))
        obj = Path(_RUNTIME_DIR[0].name) / f"qwengpu_cuda_runtime.{len(_RUNTIME_OBJECTS)}.o"
        _run(runtime_command(clang, obj), "the CUDA runtime", RUNTIME_SOURCE)
        _RUNTIME_OBJECTS[key] = obj
    return _RUNTIME_OBJECTS[key]


def build_host(path: str | Path, workdir: Path) -> Path:
    """The program's host side, a native executable in ``workdir``."""
    path = Path(path)
    clang = find_clang()
    runtime = runtime_object(clang)
    executable = workdir / (path.stem or "program")
    _run(host_command(clang, path, workdir, runtime, executable), "the host code", path)
    return executable
