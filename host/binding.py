"""A launch's arguments bound to the kernel: checked, laid out in memory, folded in.

:func:`check_launch_shape` refuses a launch shape the machine cannot run,
:func:`bind_arguments` checks ``--arg`` values against the kernel's parameters,
:func:`layout_memory` places the arrays and ``__shared__`` variables in the machine's
words, and :func:`bind_constants` turns the translated parameter loads and symbol
addresses into immediates.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu_mlx.core.errors import LaunchError, ResourceError, UnsupportedError
from qwengpu_mlx.core.isa import ArrayBinding, Imm, Op, SharedBinding
from qwengpu_mlx.core.machine import LARGE_MACHINE, MachineConfig

from qwengpu_mlx.host.ir import BasicBlock, LConst, LInstr, LParamLoad
from qwengpu_mlx.host.ptx_ast import PtxKernel, PtxModule
from qwengpu_mlx.host.signature import KernelParam

M32 = 0xFFFFFFFF

MAX_PARAMS = 1024
"""Kernel parameters the host binds (CUDA's 4 KB parameter space holds 1024 ints)."""


@dataclass
class MemoryLayout:
    arrays: list[ArrayBinding]
    shared: list[SharedBinding]
    image: list[int]

    def describe(self) -> str:
        parts = [f"{a.name}: {a.length}" for a in self.arrays]
        parts += [f"__shared__ {s.name}: {s.length}" for s in self.shared]
        return ", ".join(parts)


def layout_memory(params: list[KernelParam], values: dict[str, list[int] | int],
                  shared: list, machine: MachineConfig, kernel: str) -> MemoryLayout:
    """Place pointer arguments, then ``__shared__`` variables, in the machine's words."""
    arrays, sh, base = [], [], 0
    for p in params:
        if p.pointer:
            arrays.append(ArrayBinding(p.name, base, len(values[p.name])))
            base += len(values[p.name])
    for var in shared:
        words = (var.size_bytes + 3) // 4
        sh.append(SharedBinding(var.name, base, words))
        base += words
    if base > machine.mem_words:  # checked on the sizes, before any word is allocated
        layout = MemoryLayout(arrays, sh, [])
        raise ResourceError(
            f"kernel `{kernel}` needs {base} memory words ({layout.describe()}) "
            f"but the machine has {machine.mem_words}")
    image = [v & M32 for p in params if p.pointer for v in values[p.name]]
    image.extend([0] * (base - len(image)))
    image.extend([0] * (machine.mem_words - len(image)))
    return MemoryLayout(arrays, sh, image)


def bind_arguments(params: list[KernelParam], args: dict[str, list[int] | int | str], kernel: str
                   ) -> dict[str, list[int] | int]:
    """Check ``--arg`` values against the kernel's parameters: one each, right kind."""
    names = [p.name for p in params]
    missing = [n for n in names if n not in args]
    extra = [n for n in args if n not in names]
    if missing or extra:
        msg = [f"kernel `{kernel}` takes parameters ({', '.join(names) or 'none'})"]
        if missing:
            msg.append("missing --arg for " + ", ".join(missing))
        if extra:
            msg.append("no parameter named " + ", ".join(extra))
        raise LaunchError("; ".join(msg))
    out: dict[str, list[int] | int] = {}
    for p in params:
        v = args[p.name]
        if isinstance(v, str):
            try:
                v = [int(x, 0) for x in v.split(",") if x.strip() != ""]
            except ValueError as e:
                raise LaunchError(f"--arg {p.name}={args[p.name]}: values must be integers") from e
            if not p.pointer:
                if len(v) != 1:
                    raise LaunchError(f"--arg {p.name}: `{p.name}` is a scalar ({p.ctype}); give one integer")
                v = v[0]
        for x in (v if isinstance(v, list) else [v]):
            if isinstance(x, bool) or not isinstance(x, int):
                raise LaunchError(f"--arg {p.name}: {x!r} is not an integer")
        if p.pointer:
            if isinstance(v, int):
                v = [v]
            if len(v) == 0:
                raise LaunchError(f"--arg {p.name}: pointer parameter `{p.name}` needs at least one value")
            out[p.name] = [int(x) for x in v]
        else:
            if isinstance(v, list):
                if len(v) != 1:
                    raise LaunchError(f"--arg {p.name}: `{p.name}` is a scalar ({p.ctype}); give one integer")
                v = v[0]
            out[p.name] = int(v)
        vals = out[p.name] if isinstance(out[p.name], list) else [out[p.name]]
        for x in vals:
            if not -(1 << 31) <= x < (1 << 32):
                raise LaunchError(f"--arg {p.name}: {x} does not fit in 32 bits")
    return out


def _extend(value: int, bits: int, signed: bool) -> int:
    value &= (1 << bits) - 1
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value & M32


def check_launch_shape(kernel: PtxKernel, params: list[KernelParam], block_dim: int, grid_dim: int,
                 machine: MachineConfig, kname: str) -> None:
    """The launch's shape and the kernel's parameters within what the machine runs and the host binds."""
    if not 1 <= block_dim <= machine.max_block_dim:
        raise ResourceError(f"blockDim.x = {block_dim}: the machine runs 1..{machine.max_block_dim} "
                            f"threads per block ({machine.max_warps} warps of {machine.lanes})"
                            + (f"; the large machine runs up to {LARGE_MACHINE.max_block_dim} (--machine large)"
                               if machine.max_block_dim < block_dim <= LARGE_MACHINE.max_block_dim else ""))
    if grid_dim < 1:
        raise ResourceError(f"gridDim.x = {grid_dim}: must be at least 1")
    if len(params) != len(kernel.params):
        raise LaunchError(f"kernel `{kname}`: source lists {len(params)} parameters, PTX has {len(kernel.params)}")
    if len(kernel.params) > MAX_PARAMS:
        raise ResourceError(f"kernel `{kname}` has {len(kernel.params)} parameters; the host binds at most "
                            f"{MAX_PARAMS} (pointers need a memory word each: the machine has {machine.mem_words})")


def shared_variables(module: PtxModule, kernel: PtxKernel) -> list:
    """The kernel's ``__shared__`` variables (the module's, then its own); dynamic shared
    memory and ``__device__`` globals refused."""
    shared_vars = [v for v in module.variables if v.space == "shared"] + list(kernel.shared)
    for v in shared_vars:
        if v.size_bytes == 0:
            raise UnsupportedError(f"PTX line {v.line}: dynamic shared memory (`extern __shared__ {v.name}[]`) "
                                   f"is not supported; declare a sized __shared__ array")
    for v in module.variables:
        if v.space == "global":
            raise UnsupportedError(f"PTX line {v.line}: __device__ global variable `{v.name}` is not supported; pass arrays as kernel parameters")
    return shared_vars


def param_kinds(kernel: PtxKernel, params: list[KernelParam]) -> dict[str, str]:
    """PTX parameter name -> ``"ptr"`` or ``"scalar"`` (what the translation reads)."""
    return {pp.name: ("ptr" if p.pointer else "scalar") for pp, p in zip(kernel.params, params)}


def bind_constants(bbs: list[BasicBlock], kernel: PtxKernel, params: list[KernelParam],
                   values: dict[str, list[int] | int], layout: MemoryLayout) -> None:
    """Parameter loads and symbol addresses become ``mov`` of their immediates, in place:
    a pointer its array's byte address, a scalar its value extended as loaded."""
    shared_addr = {s.name: 4 * s.base for s in layout.shared}
    array_addr = {a.name: 4 * a.base for a in layout.arrays}
    by_ptx = {pp.name: p for pp, p in zip(kernel.params, params)}
    for bb in bbs:
        for i, it in enumerate(bb.items):
            if isinstance(it, LParamLoad):
                p = by_ptx[it.param]
                v = array_addr[p.name] if p.pointer else _extend(values[p.name], it.bits, it.signed)
                bb.items[i] = LInstr(Op.MOV, it.dst, (Imm(v & M32),), line=it.line, text=f"ld.param {p.name}")
            elif isinstance(it, LConst):
                v = shared_addr[it.value] if isinstance(it.value, str) else it.value
                bb.items[i] = LInstr(Op.MOV, it.dst, (Imm(v & M32),), line=it.line, text=f"mov {it.value}")
