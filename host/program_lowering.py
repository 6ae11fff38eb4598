"""One launch of a program's kernel, bound to the program's device memory.

A single kernel's launch (``lowering.lower``) lays its arrays out itself from the
command line's values. A program's launch finds them in place: its pointer arguments
are addresses ``cudaMalloc`` returned (the machine's byte addresses), its
``__device__``/``__constant__`` variables sit where the program's start put them, and
the memory image is the device memory as the previous launches and copies left it. So
this binding only places what lives for the launch alone, the ``__shared__`` memory (in
the highest free run of words: ``DeviceMemory.scratch``), and hands the stages of
``lowering`` the addresses; translation, folding, blocks and registers are the same.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

from qwengpu_mlx.core.errors import ResourceError, UnsupportedError
from qwengpu_mlx.core.isa import ArrayBinding, Program, SharedBinding
from qwengpu_mlx.core.launch_spec import Dims

from qwengpu_mlx.host import binding, narrow_memory
from qwengpu_mlx.host.frontend import demangle_kernel_name
from qwengpu_mlx.host.lowering import finish_program
from qwengpu_mlx.host.program_build import DeviceCode
from qwengpu_mlx.host.program_memory import DeviceMemory
from qwengpu_mlx.host.ptx_ast import PtxKernel
from qwengpu_mlx.host.signature import KernelParam
from qwengpu_mlx.host.srcloc import located
from qwengpu_mlx.host.translate import Translator
from qwengpu_mlx.host.validate import validate_kernel

_PARAM_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8}


class NoSharedMemory(Exception):
    """The launch's ``__shared__`` memory finds no free run of words (a GPU's
    "too many resources requested for launch")."""


def param_sizes(kernel: PtxKernel) -> list[int]:
    """Bytes of each parameter as the host code passes it (``.u64`` a pointer: 8)."""
    return [_PARAM_BYTES.get(p.type[1:], 4) for p in kernel.params]


def unpack_params(kernel: PtxKernel, params: list[KernelParam], data: bytes) -> dict[str, int]:
    """Parameter name -> its value: a pointer its address, a scalar as the kernel reads it."""
    values, at = {}, 0
    for pp, p in zip(kernel.params, params):
        n = _PARAM_BYTES.get(pp.type[1:], 4)
        raw = int.from_bytes(data[at: at + n], "little", signed=not p.pointer and pp.type[0] == "s")
        values[p.name] = raw
        at += n
    return values


@dataclass
class BoundLaunch:
    program: Program
    shared_base: int  # the first word the launch's __shared__ memory took


def _pointer_arrays(params: list[KernelParam], values: dict[str, int], memory: DeviceMemory,
                    kernel: PtxKernel) -> list[ArrayBinding]:
    """Each pointer argument as the words from its address to its allocation's end (for
    the readout and the fault messages); a ``char``/``short`` array is refused (the machine
    keeps those one element per word, and the host code copied them as packed bytes)."""
    _refuse_narrow_pointers(params, kernel)
    arrays = []
    for p in params:
        if not p.pointer:
            continue
        address = values[p.name]
        held = memory.allocation_at(address)
        length = (held[0] + (held[1] + 3) // 4 * 4 - address) // 4 if held else 0
        arrays.append(ArrayBinding(p.name, address // 4, length))
    return arrays


def _refuse_narrow_pointers(params: list[KernelParam], kernel: PtxKernel) -> None:
    for p in params:
        if p.pointer and p.bits < 32:
            raise located(UnsupportedError, kernel,
                          f"parameter `{p.name}` ({p.ctype.strip()}) is a {p.bits}-bit array: in a program the host "
                          f"copies packed bytes, which this machine's narrow arrays (one element per word) do not "
                          f"hold; use an int array")


def _symbol_bindings(symbols: dict[str, tuple[int, int]]) -> list[SharedBinding]:
    return [SharedBinding(name, address // 4, (size + 3) // 4) for name, (address, size) in symbols.items()]


def _shared_layout(device: DeviceCode, kernel: PtxKernel, shared_bytes: int, memory: DeviceMemory,
                   kname: str) -> tuple[list[SharedBinding], dict[str, int], int]:
    """The kernel's ``__shared__`` variables placed in free device memory for this launch."""
    module = replace(device.module, variables=[v for v in device.module.variables if v.space == "shared"])
    sized, dynamic = binding.shared_variables(module, kernel)
    dynamic = binding.size_dynamic_shared(dynamic, shared_bytes, kernel, memory.machine)
    try:
        laid = binding.layout_memory([], {}, sized, memory.machine, kname, dynamic)
    except ResourceError as e:
        raise NoSharedMemory(str(e)) from None
    words = max((s.base + s.length for s in laid.shared), default=0)
    base = memory.scratch(words)
    if base is None:
        raise NoSharedMemory(f"kernel `{kname}` needs {words} words of shared memory; the largest free run of "
                             f"device memory is {max((n for _, n in memory.free_runs()), default=0)} words")
    return [replace(s, base=s.base + base) for s in laid.shared], laid.unit, base


def lower_launch(device: DeviceCode, kernel: PtxKernel, values: dict[str, int], block: Dims, grid: Dims,
                 shared_bytes: int, memory: DeviceMemory, symbols: dict[str, tuple[int, int]],
                 few_tokens: bool = True) -> BoundLaunch:
    """The launch's machine program, its memory image the device memory as it is now; a
    refusal about the whole kernel names its ``.cu`` line, as ``lowering.lower`` does."""
    try:
        return _lower_launch(device, kernel, values, block, grid, shared_bytes, memory, symbols, few_tokens)
    except (ResourceError, UnsupportedError) as e:
        if getattr(e, "source", None) is not None:
            raise
        raise located(type(e), kernel, str(e)) from None


def _lower_launch(device: DeviceCode, kernel: PtxKernel, values: dict[str, int], block: Dims, grid: Dims,
                  shared_bytes: int, memory: DeviceMemory, symbols: dict[str, tuple[int, int]],
                  few_tokens: bool) -> BoundLaunch:
    machine, kname = memory.machine, demangle_kernel_name(kernel.name)
    params = device.params(kernel)
    binding.check_launch_shape(kernel, params, block, grid, machine, kname)
    validate_kernel(device.module, kernel)
    arrays = _pointer_arrays(params, values, memory, kernel)
    shared, unit, shared_base = _shared_layout(device, kernel, shared_bytes, memory, kname)
    globals_ = _symbol_bindings(symbols)
    layout = binding.MemoryLayout(arrays, shared + globals_, list(memory.words), unit)

    names = {s.name for s in shared} | set(symbols)
    tr = Translator(kernel, names, binding.param_kinds(kernel, params, packed=True))
    bbs = tr.run()
    narrow = narrow_memory.shared_element_bits(kernel, {p.name for p in kernel.params}, set(symbols))
    wide = [n for n, bits in narrow.items() if n in symbols and bits < 32]
    if wide:
        raise located(UnsupportedError, kernel, f"device variable `{wide[0]}` is a char/short array: in a program "
                      f"the host copies packed bytes, which this machine's narrow arrays do not hold; use int")
    program = finish_program(bbs, tr.wide, kernel, params, dict(values), layout, block, grid, machine, few_tokens,
                             tr.shared_variants)
    return BoundLaunch(program, shared_base)


def check_kernels(device: DeviceCode, symbols: set[str]) -> None:
    """Every kernel of the program translated once before the program starts, as nvcc
    compiles them all before the program runs: what the machine cannot do is refused now,
    at the user's line, not halfway through the program's output."""
    shared_names = {v.name for v in device.module.variables if v.space == "shared"}
    for kernel in device.module.kernels:
        if not kernel.body:
            continue
        params = device.params(kernel)
        try:
            validate_kernel(device.module, kernel)
            _refuse_narrow_pointers(params, kernel)
            names = shared_names | {v.name for v in kernel.shared} | symbols
            Translator(kernel, names, binding.param_kinds(kernel, params, packed=True)).run()
        except (ResourceError, UnsupportedError) as e:
            if getattr(e, "source", None) is not None:
                raise
            raise located(type(e), kernel, str(e)) from None


def misaligned_pointer(device: DeviceCode, kernel: PtxKernel, values: dict[str, int]) -> str | None:
    """The first pointer argument that is not word-aligned (the machine's words are 4 bytes)."""
    for p in device.params(kernel):
        if p.pointer and values[p.name] % 4:
            return p.name
    return None


def pack_sizes(sizes: list[int]) -> bytes:
    return struct.pack(f"<{len(sizes)}I", *sizes)
