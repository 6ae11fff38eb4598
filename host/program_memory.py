"""A program's device memory: the machine's memory image, and what is allocated in it.

A device pointer is the machine's own byte address, so a kernel uses the pointers the
host code holds as they are: the launch binds ``d_a`` to the address ``cudaMalloc``
returned. Word 0 is never allocated, so NULL stays NULL. Allocations are whole words
(the machine's memory is words), placed first-fit; a launch's ``__shared__`` memory
takes the highest free run of words for the launch's duration (:meth:`scratch`).

Copies check their bytes lie in one allocation, as the CUDA runtime does
(``cudaErrorInvalidValue`` otherwise); a word holds four bytes, little-endian, as a
GPU's memory does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu_mlx.core.machine import MachineConfig


class DeviceMemoryError(Exception):
    """A request the CUDA runtime refuses; ``code`` is its ``cudaError_t``."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


CUDA_INVALID_VALUE = 1
CUDA_MEMORY_ALLOCATION = 2


@dataclass
class DeviceMemory:
    machine: MachineConfig
    words: list[int] = field(default_factory=list)
    allocations: dict[int, int] = field(default_factory=dict)  # base byte address -> bytes asked for

    def __post_init__(self):
        if not self.words:
            self.words = [0] * self.machine.mem_words

    @property
    def total_bytes(self) -> int:
        return 4 * self.machine.mem_words

    # ---- allocation ---------------------------------------------------------------

    def _used_words(self) -> list[tuple[int, int]]:
        """(first word, word count) of every allocation, word 0 (NULL) first."""
        spans = [(0, 1)] + [(a // 4, max(1, (n + 3) // 4)) for a, n in self.allocations.items()]
        return sorted(spans)

    def free_runs(self) -> list[tuple[int, int]]:
        """(first word, word count) of every run of free words, in address order."""
        runs, at = [], 0
        for base, n in self._used_words():
            if base > at:
                runs.append((at, base - at))
            at = max(at, base + n)
        if at < self.machine.mem_words:
            runs.append((at, self.machine.mem_words - at))
        return runs

    def free_bytes(self) -> int:
        return 4 * sum(n for _, n in self.free_runs())

    def allocate(self, size: int) -> int:
        """The byte address of ``size`` new bytes (first fit); 0 for 0 bytes, as CUDA allows."""
        if size == 0:
            return 0
        words = (size + 3) // 4
        for base, n in self.free_runs():
            if n >= words:
                self.allocations[4 * base] = size
                return 4 * base
        raise DeviceMemoryError(CUDA_MEMORY_ALLOCATION,
                                f"cudaMalloc of {size} bytes: the machine's memory has {self.free_bytes()} bytes "
                                f"free ({self.total_bytes} in all)")

    def free(self, address: int) -> None:
        if address not in self.allocations:
            raise DeviceMemoryError(CUDA_INVALID_VALUE, f"cudaFree({address:#x}): not an address cudaMalloc returned")
        del self.allocations[address]

    def scratch(self, words: int) -> int | None:
        """The first word of the highest free run holding ``words`` (a launch's shared memory), or None."""
        if words == 0:
            return self.machine.mem_words
        fits = [(base, n) for base, n in self.free_runs() if n >= words]
        return fits[-1][0] + fits[-1][1] - words if fits else None

    def allocation_at(self, address: int) -> tuple[int, int] | None:
        """(base, size) of the allocation holding byte ``address``."""
        for base, size in self.allocations.items():
            if base <= address < base + max(4, (size + 3) // 4 * 4):
                return base, size
        return None

    # ---- bytes --------------------------------------------------------------------

    def check_range(self, address: int, count: int, what: str) -> None:
        """``count`` bytes at ``address`` lie inside one allocation."""
        held = self.allocation_at(address)
        if held is None or address + count > held[0] + (held[1] + 3) // 4 * 4:
            raise DeviceMemoryError(CUDA_INVALID_VALUE, f"{what}: bytes {address:#x}..{address + count - 1:#x} "
                                                        f"are not inside one device allocation")

    def read(self, address: int, count: int) -> bytes:
        first, last = address // 4, (address + count + 3) // 4
        data = b"".join((w & 0xFFFFFFFF).to_bytes(4, "little") for w in self.words[first:last])
        return data[address % 4: address % 4 + count]

    def write(self, address: int, data: bytes) -> None:
        first, last = address // 4, (address + len(data) + 3) // 4
        span = bytearray(self.read(4 * first, 4 * (last - first)))
        span[address % 4: address % 4 + len(data)] = data
        for i in range(last - first):
            self.words[first + i] = int.from_bytes(span[4 * i: 4 * i + 4], "little")
