"""The host's driver API: compile a kernel, bind a launch.

This plays NVRTC + the CUDA driver: CUDA (or PTX) source -> PTX module -> machine
program bound to the launch's arguments. Running it is the launch runtime's job
(``qwengpu_mlx.runtime.launch``, the floor above, on the model or the reference
interpreter); it is also the one caller of these two for a launch (``bind_request``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qwengpu_mlx.core.errors import FrontendError, InvalidPtx, UnsupportedError
from qwengpu_mlx.core.isa import Program
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig

from qwengpu_mlx.host.frontend import cuda_to_ptx, demangle_kernel_name, read_ptx_file, read_source, select_kernel
from qwengpu_mlx.host.lowering import lower
from qwengpu_mlx.host.ptx_parser import parse_ptx
from qwengpu_mlx.host.signature import KernelParam, cuda_kernel_params, ptx_param_name, with_float_types
from qwengpu_mlx.host.srcloc import relocated


@dataclass
class CompiledKernel:
    """A kernel's PTX and parsed form, before any launch arguments are bound."""

    source: Path | None
    ptx: str
    module: object  # PtxModule
    kernel: object  # PtxKernel
    params: list[KernelParam]


def compile_kernel(source: str | Path, kernel: str | None = None, *, frontend: str = "clang") -> CompiledKernel:
    """CUDA (.cu) or PTX (.ptx) file -> the selected kernel, parsed."""
    path = Path(source)
    if not path.exists():
        raise FrontendError(f"{path}: no such file")
    if path.suffix == ".ptx":
        ptx = read_ptx_file(path)
        cuda = None
    else:
        cuda = read_source(path)
        ptx = cuda_to_ptx(path, frontend=frontend)
    try:
        module = parse_ptx(ptx)
    except (UnsupportedError, InvalidPtx) as e:  # a PTX line only: told at the kernel's .cu line
        if cuda is None or getattr(e, "source", None) is not None:
            raise
        raise relocated(e, path, kernel) from None
    k = select_kernel(module, kernel)
    params = None
    if cuda is not None:
        params = cuda_kernel_params(cuda, demangle_kernel_name(k.name))
    if params is None or len(params) != len(k.params):
        params = [KernelParam(ptx_param_name(p.name), p.type in ("u64", "b64", "s64"), p.type) for p in k.params]
    return CompiledKernel(path, ptx, module, k, with_float_types(params, k.params, k.name))


def bind(ck: CompiledKernel, args: dict, *, block: int | tuple = 4, grid: int | tuple = 1,
         machine: MachineConfig = DEFAULT_MACHINE, few_tokens: bool = True, shared: int = 0) -> Program:
    """Lower a compiled kernel for one launch (arguments become memory and immediates);
    ``block``/``grid`` an int or up to three dimensions, ``shared`` the dynamic shared bytes."""
    return lower(ck.module, ck.kernel, ck.params, args, block_dim=block, grid_dim=grid, machine=machine,
                 few_tokens=few_tokens, shared_bytes=shared)


def placeholder_args(ck: CompiledKernel) -> dict:
    """Arguments for showing a kernel's blocks without a launch: arrays of one word, zeros."""
    return {p.name: ([0] if p.pointer else 0) for p in ck.params}

