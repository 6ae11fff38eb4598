"""The host's driver API: compile a kernel, bind a launch, run it on a backend.

This plays NVRTC + the CUDA driver: CUDA (or PTX) source -> PTX module -> machine
program bound to the launch's arguments. Running it is the launch runtime's job
(``qwengpu_mlx.runtime``); :func:`launch` and :func:`run` are shortcuts into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from qwengpu_mlx.errors import FrontendError, LaunchError
from qwengpu_mlx.isa import Program
from qwengpu_mlx.machine import DEFAULT_MACHINE, MachineConfig
from qwengpu_mlx.runtime.readout import read_outputs  # noqa: F401 - part of the host's API

from .signature import KernelParam, cuda_kernel_params, ptx_param_name


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
    from .frontend import cuda_to_ptx, read_ptx_file, read_source, select_kernel
    from .ptx_parser import parse_ptx

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
        from .frontend import demangle_kernel_name

        params = cuda_kernel_params(cuda, demangle_kernel_name(k.name))
    if params is None or len(params) != len(k.params):
        params = [KernelParam(ptx_param_name(p.name), p.type in ("u64", "b64", "s64"), p.type) for p in k.params]
    return CompiledKernel(path, ptx, module, k, params)


def bind(ck: CompiledKernel, args: dict, *, block: int = 4, grid: int = 1,
         machine: MachineConfig = DEFAULT_MACHINE, few_tokens: bool = True) -> Program:
    """Lower a compiled kernel for one launch (arguments become memory and immediates)."""
    from .lowering import lower

    return lower(ck.module, ck.kernel, ck.params, args, block_dim=block, grid_dim=grid, machine=machine,
                 few_tokens=few_tokens)


def placeholder_args(ck: CompiledKernel) -> dict:
    """Arguments for showing a kernel's blocks without a launch: arrays of one word, zeros."""
    return {p.name: ([0] if p.pointer else 0) for p in ck.params}


def launch(source: str | Path, kernel: str | None = None, *, block: int = 4, grid: int = 1,
           args: dict, backend: str = "reference", machine: MachineConfig = DEFAULT_MACHINE,
           step_budget: int | None = None, frontend: str = "clang", store=None) -> LaunchResult:
    """Compile, bind and run one launch; outputs are every pointer parameter afterwards."""
    ck = compile_kernel(source, kernel, frontend=frontend)
    program = bind(ck, args, block=block, grid=grid, machine=machine)
    return run(program, backend=backend, machine=machine, step_budget=step_budget, store=store)


def run(program: Program, *, backend: str = "reference", machine: MachineConfig = DEFAULT_MACHINE,
        step_budget: int | None = None, store=None) -> LaunchResult:
    """Run a bound program through the launch runtime (``qwengpu_mlx.runtime``).

    ``store``: the CircuitStore whose circuit the model backend runs on (default: a
    new one, which reads the on-disk circuit cache)."""
    from qwengpu_mlx import runtime

    if backend == "reference":
        ref = runtime.run_reference(program, machine, step_budget=step_budget)
        return LaunchResult(program.kernel, "reference", ref.outputs, ref.steps, program)
    if backend == "model":
        ml = runtime.launch_program(program, store or runtime.CircuitStore(), machine, step_budget=step_budget)
        return LaunchResult(program.kernel, "model", ml.outputs, ml.steps, program,
                            {"tokens": len(ml.tokens), "launch_tokens": ml.tokens,
                             "tokens_per_s": round(ml.tokens_per_s, 2)})
    raise LaunchError(f"unknown backend `{backend}` (available: model, reference)")
