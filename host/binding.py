"""A launch's arguments bound to the kernel: checked, laid out in memory, folded in.

:func:`check_launch_shape` refuses a launch shape the machine cannot run (its
``blockDim`` and ``gridDim`` in three dimensions, run as linear ones: ``launch_dims``),
:func:`bind_arguments` checks ``--arg`` values against the kernel's parameters,
:func:`layout_memory` places the arrays and ``__shared__`` variables in the machine's
words, and :func:`bind_constants` turns the translated parameter loads and symbol
addresses into immediates.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from qwengpu_mlx.core.errors import LaunchError, ResourceError, UnsupportedError
from qwengpu_mlx.core.isa import ArrayBinding, Imm, Op, SharedBinding
from qwengpu_mlx.core.launch_spec import Dims
from qwengpu_mlx.core.machine import LARGE_MACHINE, MachineConfig
from qwengpu_mlx.core.float32 import FloatArray
from qwengpu_mlx.core.readout import NarrowArray

from qwengpu_mlx.host import narrow_memory
from qwengpu_mlx.host.float_arguments import float_argument
from qwengpu_mlx.host.ir import BasicBlock, LConst, LInstr, LParamLoad
from qwengpu_mlx.host.ptx_ast import PtxKernel, PtxModule
from qwengpu_mlx.host.signature import KernelParam
from qwengpu_mlx.host.srcloc import located, source_name

M32 = 0xFFFFFFFF

MAX_PARAMS = 1024
"""Kernel parameters the host binds (CUDA's 4 KB parameter space holds 1024 ints)."""


@dataclass
class MemoryLayout:
    arrays: list[ArrayBinding]
    shared: list[SharedBinding]
    image: list[int]
    unit: dict[str, int] = field(default_factory=dict)  # bytes per word of a narrow array (1 or 2)

    def describe(self) -> str:
        parts = [f"{a.name}: {a.length}" for a in self.arrays]
        parts += [f"__shared__ {source_name(s.name)}: {s.length}" for s in self.shared]
        return ", ".join(parts)


def layout_memory(params: list[KernelParam], values: dict[str, list[int] | int],
                  shared: list, machine: MachineConfig, kernel: str, dynamic: list = ()) -> MemoryLayout:
    """Place pointer arguments, then ``__shared__`` variables, then the launch's dynamic
    shared memory in the machine's words. Every ``extern __shared__`` array starts at the
    dynamic memory's first word, as in CUDA (they alias)."""
    arrays, sh, base, unit = [], [], 0, {}
    for p in params:
        if p.pointer:
            n = len(values[p.name])
            arrays.append(NarrowArray(p.name, base, n, p.bits, p.signed) if p.bits < 32 else
                          FloatArray(p.name, base, n) if p.floating else ArrayBinding(p.name, base, n))
            unit.update({p.name: p.bits // 8} if p.bits < 32 else {})
            base += n
    for var in shared:
        words = _shared_words(var, unit)
        sh.append(SharedBinding(var.name, base, words))
        base += words
    dynamic_words = max((_shared_words(v, unit) for v in dynamic), default=0)
    sh.extend(SharedBinding(v.name, base, dynamic_words) for v in dynamic)
    base += dynamic_words
    if base > machine.mem_words:  # checked on the sizes, before any word is allocated
        layout = MemoryLayout(arrays, sh, [])
        raise ResourceError(
            f"kernel `{kernel}` needs {base} memory words ({layout.describe()}) "
            f"but the machine has {machine.mem_words}{larger_machine_hint(machine, 'mem_words', base)}")
    image = [v & ((1 << p.bits) - 1 if p.bits < 32 else M32) for p in params if p.pointer for v in values[p.name]]
    image.extend([0] * (base - len(image)))
    image.extend([0] * (machine.mem_words - len(image)))
    return MemoryLayout(arrays, sh, image, unit)


def _shared_words(var, unit: dict[str, int]) -> int:
    """Words of a ``__shared__`` array: one per element where it is narrow (``narrow_memory``),
    whose pointer unit goes to ``unit``; else its bytes in whole words."""
    bits = narrow_memory.word_element_bits(var.elem_type)
    if bits == 32:
        return (var.size_bytes + 3) // 4
    unit[var.name] = bits // 8
    return (var.size_bytes + bits // 8 - 1) // (bits // 8)


_LARGE_SIZES = {"mem_words": "{n:,} memory words", "max_block_dim": "up to {n} threads per block",
                "rom_blocks": "a ROM of {n} blocks"}


def larger_machine_hint(machine: MachineConfig, size: str, needed: int) -> str:
    """``; this needs --machine large, which has 1,024 memory words`` where the large
    machine's ``size`` would hold ``needed`` and this machine's does not; else nothing.
    One wording for memory, threads per block and the ROM."""
    have, large = getattr(machine, size), getattr(LARGE_MACHINE, size)
    if have < needed <= large:
        return f"; this needs --machine large, which has {_LARGE_SIZES[size].format(n=large)}"
    return ""


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
        if p.floating:  # decimals -> binary32 bit patterns
            out[p.name] = float_argument(p, args[p.name])
            continue
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
        bits = p.bits  # a char/short array's elements, or a char/short scalar
        for x in vals:
            if not -(1 << (bits - 1)) <= x < (1 << bits):
                raise LaunchError(f"--arg {p.name}: {x} does not fit in {bits} bits"
                                  + (f" (`{p.name}` is {p.ctype.strip()})" if bits < 32 else ""))
    return out


def _extend(value: int, bits: int, signed: bool) -> int:
    value &= (1 << bits) - 1
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value & M32


def _dims_text(what: str, dims: Dims) -> str:
    """``blockDim.x = 8`` for a 1-D shape, ``blockDim (8, 4, 1)`` otherwise."""
    return f"{what}.x = {dims[0]}" if dims[1:] == (1, 1) else f"{what} {dims}"


def check_launch_shape(kernel: PtxKernel, params: list[KernelParam], block: Dims, grid: Dims,
                       machine: MachineConfig, kname: str) -> None:
    """The launch's shape and the kernel's parameters within what the machine runs and the host binds."""
    threads = block[0] * block[1] * block[2]
    if min(block) < 1 or threads > machine.max_block_dim:
        count = "" if block[1:] == (1, 1) or min(block) < 1 else f" is {threads} threads"
        raise ResourceError(f"{_dims_text('blockDim', block)}{count}: the machine runs 1..{machine.max_block_dim} "
                            f"threads per block ({machine.max_warps} warps of {machine.lanes})"
                            + larger_machine_hint(machine, "max_block_dim", threads))
    if min(grid) < 1:
        raise ResourceError(f"{_dims_text('gridDim', grid)}: must be at least 1"
                            + ("" if grid[1:] == (1, 1) else " in each dimension"))
    if len(params) != len(kernel.params):
        raise LaunchError(f"kernel `{kname}`: source lists {len(params)} parameters, PTX has {len(kernel.params)}")
    if len(kernel.params) > MAX_PARAMS:
        raise ResourceError(f"kernel `{kname}` has {len(kernel.params)} parameters; the host binds at most "
                            f"{MAX_PARAMS} (pointers need a memory word each: the machine has {machine.mem_words})")


def shared_variables(module: PtxModule, kernel: PtxKernel) -> tuple[list, list]:
    """The kernel's ``__shared__`` variables (the module's, then its own), as (sized ones,
    ``extern __shared__`` arrays sized by the launch); ``__device__`` globals refused."""
    shared_vars = [v for v in module.variables if v.space == "shared"] + list(kernel.shared)
    for v in module.variables:
        if v.space == "global":
            raise located(UnsupportedError, kernel, f"__device__ global variable `{v.name}` is not supported; "
                          f"pass arrays as kernel parameters", ptx_line=v.line, name=v.name)
    narrow = narrow_memory.shared_element_bits(kernel, {p.name for p in kernel.params}, {v.name for v in shared_vars})
    shared_vars = [replace(v, elem_type=narrow_memory.one_per_word(narrow[v.name])) if narrow.get(v.name, 32) < 32
                   else v for v in shared_vars]
    return [v for v in shared_vars if v.size_bytes > 0], [v for v in shared_vars if v.size_bytes == 0]


def size_dynamic_shared(dynamic: list, shared_bytes: int, kernel: PtxKernel, machine: MachineConfig) -> list:
    """The ``extern __shared__`` arrays with the launch's ``--shared`` bytes; refused (at
    the declaration's line) when the launch gives none."""
    if dynamic and shared_bytes <= 0:
        v = dynamic[0]
        raise located(UnsupportedError, kernel,
                      f"`extern __shared__ {v.name}[]` is sized by the launch, which gives no dynamic shared "
                      f"memory: launch with --shared BYTES (a launch file's \"shared\": BYTES; the machine has "
                      f"{4 * machine.mem_words} bytes of memory in all)", ptx_line=v.line, name=v.name)
    return [replace(v, size_bytes=shared_bytes) for v in dynamic]


def param_kinds(kernel: PtxKernel, params: list[KernelParam], packed: bool = False) -> dict[str, str]:
    """PTX parameter name -> ``"ptr"``, ``"ptr8"``/``"ptr16"`` (a ``char``/``short`` array,
    one element per word: ``narrow_memory``), ``"ptr64"`` (a ``long long`` array, which a
    launch's arguments cannot lay out: ``wide64`` refuses its accesses; ``packed``: a
    program's, whose host code copied it as the bytes it is, so a plain ``"ptr"``) or
    ``"scalar"`` (what the translation reads)."""
    def kind(p: KernelParam) -> str:
        if not p.pointer:
            return "scalar"
        return "ptr" + (str(p.bits) if p.bits < 32 or (p.bits == 64 and not packed) else "")
    return {pp.name: kind(p) for pp, p in zip(kernel.params, params)}


def bind_constants(bbs: list[BasicBlock], kernel: PtxKernel, params: list[KernelParam],
                   values: dict[str, list[int] | int], layout: MemoryLayout) -> None:
    """Parameter loads and symbol addresses become ``mov`` of their immediates, in place:
    a pointer its array's byte address, a scalar its value extended as loaded."""
    shared_addr = {s.name: layout.unit.get(s.name, 4) * s.base for s in layout.shared}
    array_addr = {a.name: layout.unit.get(a.name, 4) * a.base for a in layout.arrays}
    by_ptx = {pp.name: p for pp, p in zip(kernel.params, params)}
    for bb in bbs:
        for i, it in enumerate(bb.items):
            if isinstance(it, LParamLoad):
                p = by_ptx[it.param]
                v = array_addr[p.name] if p.pointer else _extend(values[p.name], it.bits, it.signed)
                if it.bits == 64:  # a 64-bit scalar's high word (wide64: the low word loads as 32 bits)
                    v = (values[p.name] >> 32) & M32
                bb.items[i] = LInstr(Op.MOV, it.dst, (Imm(v & M32),), line=it.line, text=f"ld.param {p.name}")
            elif isinstance(it, LConst):
                v = shared_addr[it.value] if isinstance(it.value, str) else it.value
                bb.items[i] = LInstr(Op.MOV, it.dst, (Imm(v & M32),), line=it.line, text=f"mov {it.value}")
