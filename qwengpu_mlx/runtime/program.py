"""The device of a running CUDA program: its memory, its variables, and every launch on the model.

``qwengpu-mlx run prog.cu`` compiles the program (``host.program_build``) and starts it
as a child process; its CUDA runtime sends each call that touches the device here over
a pipe (``host.program_protocol``), and :class:`ProgramDevice` answers it: the device
memory (``host.program_memory``) holds every allocation and ``__device__`` variable, a
launch is bound to it (``host.program_lowering``) and run through the one launch entry
(``runtime.launch``) on the model, or the reference interpreter, and the memory the
launch leaves is the device memory from then on. The host code never computes a
kernel's result: it only moves bytes.

The errors are CUDA's: a launch shape beyond the device's limits is
``cudaErrorInvalidConfiguration`` and the program goes on; a kernel the machine stops
(a memory fault, a division by zero, the step budget) is reported on stderr as a single
kernel's launch reports it, and the program sees ``cudaErrorLaunchFailure``. A kernel
the host refuses to compile (``UnsupportedError`` at the user's line) ends the program:
it would otherwise run with other semantics.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from typing import Callable

from qwengpu_mlx.core.errors import ExecutionError, LaunchTimeout, QwenGpuError
from qwengpu_mlx.core.machine import MachineConfig, machine_name
from qwengpu_mlx.host import program_lowering as pl
from qwengpu_mlx.host.frontend import demangle_kernel_name
from qwengpu_mlx.host.program_build import DeviceCode
from qwengpu_mlx.host.program_memory import DeviceMemory, DeviceMemoryError
from qwengpu_mlx.host.program_printf import BUFFER, COUNTER, RECORDS
from qwengpu_mlx.host.program_protocol import (CudaError, Op, machine_address, properties_payload, read_launch,
                                               read_text)
from qwengpu_mlx.runtime.generate import Launch
from qwengpu_mlx.runtime.launch import LaunchEvents, LaunchRequest, launch

CUDA_WARP_SIZE = 32
"""The warp a kernel sees (``host/prelude.h``: warpSize is 32, the machine's 4-lane warps
are inside it)."""

MAX_GRID = (2**31 - 1, 65535, 65535)
"""CUDA's grid limits; the machine runs thread blocks one after another, so any of them."""


class ProgramRefused(QwenGpuError):
    """A kernel the host cannot run as a GPU would: the program is stopped with the refusal."""

    exit_status = 2


@dataclass
class LaunchRecord:
    """What the summary line says about one launch."""

    index: int
    kernel: str
    grid: tuple
    block: tuple
    shared: int
    backend: str
    steps: int = 0
    tokens: int = 0
    tokens_per_s: float = 0.0
    seconds: float = 0.0
    exact: bool | None = None  # under --check
    failure: str | None = None  # the machine stopped it

    def summary(self) -> str:
        shape = f"<<<{_dims_text(self.grid)}, {_dims_text(self.block)}" + (f", {self.shared}" if self.shared else "")
        head = f"[launch {self.index}] {self.kernel}{shape}>>> on the {self.backend}"
        if self.failure:
            return f"{head}: stopped ({self.failure})"
        if self.backend == "reference":
            return f"{head}: {self.steps} steps, {self.seconds:.2f} s"
        check = "" if self.exact is None else (", exact" if self.exact else ", MISMATCH")
        return (f"{head}: {self.steps} steps, {self.tokens} tokens, {self.tokens_per_s:.1f} tok/s, "
                f"{self.seconds:.1f} s{check}")


@dataclass
class ProgramDevice:
    """The device one program sees; :meth:`answer` serves one request."""

    code: DeviceCode
    machine: MachineConfig
    backend: str = "model"
    check: bool = False
    store: object = None  # runtime.store.CircuitStore (model backend)
    runner: object = None  # a runner the caller holds (--model)
    step_budget: int | None = None
    timeout: float | None = None
    on_launch: Callable[[LaunchRecord], None] = lambda record: None
    events: LaunchEvents | None = None  # the launch entry's progress (the circuit's first load)
    memory: DeviceMemory = None
    symbols: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (address, size)
    launches: list[LaunchRecord] = field(default_factory=list)

    def __post_init__(self):
        self.memory = DeviceMemory(self.machine)
        for var in self.code.variables:  # placed once, with their initial bytes
            try:
                address = self.memory.allocate(max(var.size, 1))
            except DeviceMemoryError as e:
                raise ProgramRefused(f"the program's __device__ variables do not fit the machine's memory: {e}")
            self.memory.write(address, var.initial)
            self.symbols[var.name] = (address, var.size)
        pl.check_kernels(self.code, set(self.symbols))

    # ---- requests -------------------------------------------------------------------

    def answer(self, op: int, payload: bytes) -> tuple[int, bytes]:
        """One request's ``(cudaError_t, reply payload)``."""
        handler = {Op.MALLOC: self._malloc, Op.FREE: self._free, Op.WRITE: self._write, Op.READ: self._read,
                   Op.COPY: self._copy, Op.MEMSET: self._memset, Op.SYMBOL: self._symbol,
                   Op.PARAMS: self._params, Op.LAUNCH: self._launch, Op.PROPS: self._properties,
                   Op.SYNC: lambda p: (CudaError.SUCCESS, b""), Op.MEMINFO: self._meminfo}.get(op)
        if handler is None:
            return CudaError.NOT_SUPPORTED, b""
        try:
            return handler(payload)
        except DeviceMemoryError as e:
            return e.code, b""

    def _malloc(self, payload: bytes):
        (size,) = struct.unpack("<Q", payload)
        return CudaError.SUCCESS, struct.pack("<Q", self.memory.allocate(size))

    def _free(self, payload: bytes):
        self.memory.free(struct.unpack("<Q", payload)[0])
        return CudaError.SUCCESS, b""

    def _write(self, payload: bytes):
        (address,) = struct.unpack_from("<Q", payload)
        data = payload[8:]
        self.memory.check_range(address, len(data), "cudaMemcpy to the device")
        self.memory.write(address, data)
        return CudaError.SUCCESS, b""

    def _read(self, payload: bytes):
        address, count = struct.unpack("<QQ", payload)
        self.memory.check_range(address, count, "cudaMemcpy from the device")
        return CudaError.SUCCESS, self.memory.read(address, count)

    def _copy(self, payload: bytes):
        dst, src, count = struct.unpack("<QQQ", payload)
        self.memory.check_range(src, count, "cudaMemcpy on the device (source)")
        self.memory.check_range(dst, count, "cudaMemcpy on the device (destination)")
        self.memory.write(dst, self.memory.read(src, count))
        return CudaError.SUCCESS, b""

    def _memset(self, payload: bytes):
        address, value, count = struct.unpack("<QiQ", payload)
        self.memory.check_range(address, count, "cudaMemset")
        self.memory.write(address, bytes([value & 0xFF]) * count)
        return CudaError.SUCCESS, b""

    def _symbol(self, payload: bytes):
        name, _ = read_text(payload)
        if name not in self.symbols:
            return CudaError.INVALID_SYMBOL, b""
        return CudaError.SUCCESS, struct.pack("<QQ", *self.symbols[name])

    def _params(self, payload: bytes):
        name, _ = read_text(payload)
        kernel = self.code.kernel(name)
        if kernel is None:
            return CudaError.INVALID_DEVICE_FUNCTION, b""
        return CudaError.SUCCESS, pl.pack_sizes(pl.param_sizes(kernel))

    def _meminfo(self, payload: bytes):
        return CudaError.SUCCESS, struct.pack("<QQ", self.memory.free_bytes(), self.memory.total_bytes)

    def _properties(self, payload: bytes):
        m = self.machine
        name = machine_name(m)  # its own name: "default" would name another machine once the default moves
        threads = m.max_block_dim
        fields = [4 * m.mem_words, 4 * m.mem_words, m.usable_regs * threads, CUDA_WARP_SIZE, threads,
                  threads, threads, threads, *MAX_GRID, 4 * m.mem_words, 7, 5, 1, 0]
        return CudaError.SUCCESS, properties_payload(f"qwengpu-mlx {name} machine", fields)

    # ---- launches -------------------------------------------------------------------

    def _bad_configuration(self, grid: tuple, block: tuple) -> bool:
        """CUDA's check before a launch: every dimension at least 1, within the device's limits."""
        threads = block[0] * block[1] * block[2]
        return (min(*grid, *block) < 1 or threads > self.machine.max_block_dim
                or any(g > limit for g, limit in zip(grid, MAX_GRID)))

    def _launch(self, payload: bytes):
        msg = read_launch(payload)
        kernel = self.code.kernel(msg.kernel)
        if kernel is None:
            return CudaError.INVALID_DEVICE_FUNCTION, b""
        if self._bad_configuration(msg.grid, msg.block):
            return CudaError.INVALID_CONFIGURATION, b""
        params = self.code.params(kernel)
        values = pl.unpack_params(kernel, params, msg.params)
        record = LaunchRecord(len(self.launches) + 1, demangle_kernel_name(kernel.name), msg.grid, msg.block,
                              msg.shared, self.backend)
        self.launches.append(record)
        host_pointer = self._to_machine_addresses(params, values)
        if host_pointer is not None:
            record.failure = f"argument `{host_pointer}` is not a device address"
            print(f"error: kernel `{record.kernel}`: {record.failure} (a host pointer? copy the data to memory "
                  f"from cudaMalloc and pass that); an illegal memory access on a GPU", file=sys.stderr)
            self.on_launch(record)
            return CudaError.ILLEGAL_ADDRESS, b""
        misaligned = pl.misaligned_pointer(self.code, kernel, values)
        if misaligned is not None:
            record.failure = f"pointer `{misaligned}` is not a multiple of 4 bytes"
            print(f"error: kernel `{record.kernel}`: {record.failure} (misaligned address)", file=sys.stderr)
            self.on_launch(record)
            return CudaError.MISALIGNED_ADDRESS, b""
        try:
            bound = pl.lower_launch(self.code, kernel, values, _dims(msg.block), _dims(msg.grid), msg.shared,
                                    self.memory, self.symbols)
        except pl.NoSharedMemory as e:
            record.failure = str(e)
            self.on_launch(record)
            return CudaError.LAUNCH_OUT_OF_RESOURCES, b""
        except QwenGpuError as e:  # refused: the kernel cannot run as it would on a GPU
            raise ProgramRefused(str(e)) from None
        return self._run(bound.program, record)

    def _to_machine_addresses(self, params, values: dict[str, int]) -> str | None:
        """Pointer arguments as machine byte addresses, in place; the first that is no device address."""
        for p in params:
            if p.pointer:
                address = machine_address(values[p.name], self.memory.total_bytes)
                if address is None:
                    return p.name
                values[p.name] = address
        return None

    def _run(self, program, record: LaunchRecord):
        req = LaunchRequest(program=program, machine=self.machine, backend=self.backend, check=self.check,
                            step_budget=self.step_budget, timeout=self.timeout)
        try:
            result = launch(req, store=self.store, runner=self.runner, events=self.events)
        except ExecutionError as e:
            record.failure = type(e).__name__
            print(f"error: {e}", file=sys.stderr)
            self.on_launch(record)
            return (CudaError.LAUNCH_TIMEOUT if isinstance(e, LaunchTimeout) else CudaError.LAUNCH_FAILURE), b""
        self.memory.words = list(result.memory)
        _fill_record(record, result, self.check)
        if self.check and not result.check.exact:
            for p in result.check.problems:
                print(f"check: {p}", file=sys.stderr)
        self.on_launch(record)
        return CudaError.SUCCESS, self._printed()

    def _printed(self) -> bytes:
        """The launch's printf records (``host.program_printf``) for the runtime to print, the
        counter cleared for the next launch: ``u32 count``, then each record's format
        (``u32 length, bytes``) and words (``u32 count, u32 words``)."""
        if COUNTER not in self.symbols:
            return b""
        counter, _ = self.symbols[COUNTER]
        buffer, size = self.symbols[BUFFER]
        (count,) = struct.unpack("<I", self.memory.read(counter, 4))
        self.memory.write(counter, bytes(4))
        words = size // 4 // RECORDS
        out = [struct.pack("<I", min(count, RECORDS))]
        for i in range(min(count, RECORDS)):
            rec = struct.unpack(f"<{words}I", self.memory.read(buffer + 4 * words * i, 4 * words))
            fmt = self._c_string(rec[0])
            out.append(struct.pack("<I", len(fmt)) + fmt + struct.pack(f"<I{words - 1}I", words - 1, *rec[1:]))
        return b"".join(out)

    def _c_string(self, address: int) -> bytes:
        """The NUL-terminated bytes at ``address`` (a format string of the program's, in device memory)."""
        held = self.memory.allocation_at(address)
        if held is None:
            return b"(format string outside device memory)"
        data = self.memory.read(address, held[0] + held[1] - address)
        return data.split(b"\0", 1)[0]

    @property
    def mismatches(self) -> int:
        return sum(1 for r in self.launches if r.exact is False)


def _dims_text(d: tuple) -> str:
    """``4`` for a 1-D shape, ``(2, 2)`` or ``(2, 2, 3)`` otherwise: a ``dim3`` as the program wrote it."""
    d = tuple(d)
    while len(d) > 1 and d[-1] == 1:
        d = d[:-1]
    return str(d[0]) if len(d) == 1 else "(" + ", ".join(map(str, d)) + ")"


def _dims(d: tuple) -> tuple[int, int, int]:
    return (int(d[0]), int(d[1]), int(d[2]))


def _fill_record(record: LaunchRecord, result: Launch, checked: bool) -> None:
    record.steps = result.steps
    record.tokens = len(result.tokens)
    record.seconds = result.seconds
    record.tokens_per_s = result.tokens_per_s if result.tokens else 0.0
    if checked and result.check is not None:
        record.exact = bool(result.check.exact)
