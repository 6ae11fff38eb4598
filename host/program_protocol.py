"""The pipe between a running program's CUDA runtime and the qwengpu-mlx process.

The program (a child process) writes requests, the qwengpu-mlx process answers each
one before the next: a request is ``u32 opcode, u32 length, payload``; a reply is
``i32 cudaError_t, u32 length, payload``; integers little-endian (the host's order:
both ends run on the same machine). The opcodes and payloads are those of
``host/cuda_runtime/qwengpu_cuda_runtime.cpp``; keep the two in step.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from enum import IntEnum

DEVICE_BASE = 0x2_0000_0000
"""A device pointer in the program is ``DEVICE_BASE`` + the machine's byte address (the
runtime's constant of the same name): a multiple of 2^32, so its low 32 bits, the only
ones the machine's address arithmetic keeps, are the byte address; a range no process
uses otherwise, where managed memory is mapped at the same addresses on both sides.
The requests and replies carry machine byte addresses; only kernel arguments carry the
program's pointers (:func:`machine_address`)."""

FDS_VARIABLE = "QWENGPU_CUDA_FDS"
"""The environment variable naming the program's two pipe ends: ``READ_FD,WRITE_FD``."""


class Op(IntEnum):
    MALLOC = 1  # u64 size -> u64 address
    FREE = 2  # u64 address
    WRITE = 3  # u64 address, bytes
    READ = 4  # u64 address, u64 count -> bytes
    COPY = 5  # u64 destination, u64 source, u64 count
    MEMSET = 6  # u64 address, i32 value, u64 count
    SYMBOL = 7  # text name -> u64 address, u64 size
    PARAMS = 8  # text kernel -> u32 size of each parameter
    LAUNCH = 9  # text kernel, u32 grid[3], u32 block[3], u64 shared bytes, the parameters' bytes
    PROPS = 10  # -> char name[64], i64 fields[16] (the runtime's cudaGetDeviceProperties)
    SYNC = 11
    MEMINFO = 12  # -> u64 free, u64 total


class CudaError(IntEnum):
    """The ``cudaError_t`` values the server answers with (CUDA's own numbers)."""

    SUCCESS = 0
    INVALID_VALUE = 1
    MEMORY_ALLOCATION = 2
    INVALID_CONFIGURATION = 9
    INVALID_SYMBOL = 13
    INVALID_DEVICE_FUNCTION = 98
    ILLEGAL_ADDRESS = 700
    LAUNCH_OUT_OF_RESOURCES = 701
    LAUNCH_TIMEOUT = 702
    MISALIGNED_ADDRESS = 716
    LAUNCH_FAILURE = 719
    NOT_SUPPORTED = 801


@dataclass
class Request:
    op: int
    payload: bytes


class ProgramGone(Exception):
    """The program closed its end of the pipe (it exited, or crashed)."""


def _read_exact(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        got = os.read(fd, left)
        if not got:
            raise ProgramGone()
        chunks.append(got)
        left -= len(got)
    return b"".join(chunks)


def read_request(fd: int) -> Request:
    op, length = struct.unpack("<II", _read_exact(fd, 8))
    return Request(op, _read_exact(fd, length))


def write_reply(fd: int, status: int, payload: bytes = b"") -> None:
    data = struct.pack("<iI", int(status), len(payload)) + payload
    while data:
        data = data[os.write(fd, data):]


def read_text(payload: bytes, at: int = 0) -> tuple[str, int]:
    """A ``u32 length, bytes`` string from ``payload`` at ``at``: the text and where it ends."""
    (n,) = struct.unpack_from("<I", payload, at)
    return payload[at + 4: at + 4 + n].decode("utf-8", "replace"), at + 4 + n


@dataclass(frozen=True)
class LaunchMessage:
    kernel: str  # the device (mangled) name
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    params: bytes


def read_launch(payload: bytes) -> LaunchMessage:
    kernel, at = read_text(payload)
    dims = struct.unpack_from("<6I", payload, at)
    (shared,) = struct.unpack_from("<Q", payload, at + 24)
    return LaunchMessage(kernel, tuple(dims[:3]), tuple(dims[3:]), shared, payload[at + 32:])


def machine_address(pointer: int, total_bytes: int) -> int | None:
    """The machine byte address of a program's device pointer; 0 for NULL; None for a
    pointer that is not a device address (a host pointer passed to a kernel)."""
    if pointer == 0:
        return 0
    if DEVICE_BASE <= pointer < DEVICE_BASE + total_bytes:
        return pointer - DEVICE_BASE
    return None


def properties_payload(name: str, fields: list[int]) -> bytes:
    """``cudaDeviceProp`` as the runtime reads it: the name in 64 bytes, then 16 integers."""
    raw = name.encode()[:63]
    return raw + bytes(64 - len(raw)) + struct.pack("<16q", *fields)
