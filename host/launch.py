"""The host's driver API: compile a kernel, bind a launch, run it on a backend.

This plays NVRTC + the CUDA driver: CUDA (or PTX) source -> PTX module -> machine
program bound to the launch's arguments. Running it on the model is the launch runtime's
job (``qwengpu_mlx.runtime``, the floor above); :func:`launch` and :func:`run` run it on the
reference interpreter, which is what the host's tests of the front end need.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from qwengpu_mlx.core.errors import FrontendError
from qwengpu_mlx.core.isa import Program
from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MachineConfig
from qwengpu_mlx.core.readout import read_outputs  # also part of the host's API

from qwengpu_mlx.core.reference import run_program
from qwengpu_mlx.host.signature import KernelParam, cuda_kernel_params, ptx_param_name


@dataclass
class CompiledKernel:
    """A kernel's PTX and parsed form, before any launch arguments are bound."""

    source: Path | None
    ptx: str
    module: object  # PtxModule
    kernel: object  # PtxKernel
    params: list[KernelParam]


@dataclass
class LaunchResult:
    kernel: str
    backend: str
    outputs: dict[str, list[int]]  # every pointer parameter, signed 32-bit, after the launch
    steps: int
    program: Program
    extra: dict = field(default_factory=dict)  # backend-specific figures (tokens, margins...)

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "backend": self.backend, "outputs": self.outputs,
                "steps": self.steps, **self.extra}


def compile_kernel(source: str | Path, kernel: str | None = None, *, frontend: str = "clang") -> CompiledKernel:
    """CUDA (.cu) or PTX (.ptx) file -> the selected kernel, parsed."""
    from qwengpu_mlx.host.frontend import cuda_to_ptx, read_ptx_file, read_source, select_kernel
    from qwengpu_mlx.host.ptx_parser import parse_ptx

    path = Path(source)
    if not path.exists():
        raise FrontendError(f"{path}: no such file")
    if path.suffix == ".ptx":
        ptx = read_ptx_file(path)
        cuda = None
    else:
        cuda = read_source(path)
        ptx = cuda_to_ptx(path, frontend=frontend)
    module = parse_ptx(ptx)
    k = select_kernel(module, kernel)
    params = None
    if cuda is not None:
        from qwengpu_mlx.host.frontend import demangle_kernel_name

        params = cuda_kernel_params(cuda, demangle_kernel_name(k.name))
    if params is None or len(params) != len(k.params):
        params = [KernelParam(ptx_param_name(p.name), p.type in ("u64", "b64", "s64"), p.type) for p in k.params]
    return CompiledKernel(path, ptx, module, k, params)


def bind(ck: CompiledKernel, args: dict, *, block: int = 4, grid: int = 1,
         machine: MachineConfig = DEFAULT_MACHINE, few_tokens: bool = True) -> Program:
    """Lower a compiled kernel for one launch (arguments become memory and immediates)."""
    from qwengpu_mlx.host.lowering import lower

    return lower(ck.module, ck.kernel, ck.params, args, block_dim=block, grid_dim=grid, machine=machine,
                 few_tokens=few_tokens)


def placeholder_args(ck: CompiledKernel) -> dict:
    """Arguments for showing a kernel's blocks without a launch: arrays of one word, zeros."""
    return {p.name: ([0] if p.pointer else 0) for p in ck.params}


def launch(source: str | Path, kernel: str | None = None, *, block: int = 4, grid: int = 1,
           args: dict, machine: MachineConfig = DEFAULT_MACHINE, step_budget: int | None = None,
           frontend: str = "clang") -> LaunchResult:
    """Compile, bind and run one launch on the reference interpreter (the host's own check
    of what a kernel means); outputs are every pointer parameter afterwards."""
    ck = compile_kernel(source, kernel, frontend=frontend)
    program = bind(ck, args, block=block, grid=grid, machine=machine)
    return run(program, machine=machine, step_budget=step_budget)


def run(program: Program, *, machine: MachineConfig = DEFAULT_MACHINE,
        step_budget: int | None = None) -> LaunchResult:
    """A bound program on the reference interpreter. Launches on the model go through the
    launch runtime (``qwengpu_mlx.runtime.launch_program``), a floor above this one."""
    res = run_program(program, machine, step_budget=step_budget, trace=False)
    return LaunchResult(program.kernel, "reference", read_outputs(program, res.memory), res.steps, program)
