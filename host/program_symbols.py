"""A program's ``__device__`` and ``__constant__`` variables: their initial bytes, and a
PTX module the kernel lowering reads as it reads any other.

In a whole program (``program_build``) these variables live in device memory, which the
qwengpu-mlx process holds: it places each one once, when the program starts, with the
bytes its initializer gives (``__device__ int g = 5;`` is ``.global .u32 g = 5;`` in the
PTX), and the program reads and writes them with ``cudaMemcpyToSymbol``/``FromSymbol``.
The PTX parser refuses initializers (a single kernel's launch has no place to keep
them), so :func:`split_initializers` takes them out of the text and returns them apart.

``__constant__`` memory is read-only memory to a kernel (clang refuses a store to it at
the user's line); the machine has one memory, so ``.const`` is read as ``.global``: the
same words, loaded the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qwengpu_mlx.core.errors import UnsupportedError

_DECL_RE = re.compile(
    r"^(?P<head>[ \t]*(?:\.(?:visible|extern|weak)\s+)*\.(?P<space>global|const)\s+(?:\.align\s+\d+\s+)?"
    r"\.(?P<type>[bsuf]\d+)\s+(?P<name>[\w$.]+)(?P<dims>(?:\[\d*\])*))\s*(?:=\s*(?P<init>[^;]*))?;",
    re.M)
_CONST_USE_RE = re.compile(r"\b(ld|cvta|cvta\.to)\.const\b")


@dataclass(frozen=True)
class DeviceVariable:
    """A ``__device__``/``__constant__`` variable: its PTX name, size and initial bytes."""

    name: str
    size: int
    initial: bytes  # ``size`` bytes: the initializer's, zeros where it has none
    constant: bool
    line: int  # its PTX line, for errors


def _element_bytes(ptx_type: str) -> int:
    return max(1, int(ptx_type[1:]) // 8)


def _count(dims: str) -> int:
    n = 1
    for d in re.findall(r"\[(\d*)\]", dims):
        n *= int(d) if d else 0
    return n


def _initial_bytes(init: str | None, ptx_type: str, size: int, name: str, line: int) -> bytes:
    """The bytes of ``= 5`` / ``= {1, 0, 0, 0}`` in the declared element type, little-endian."""
    if init is None:
        return bytes(size)
    if re.search(r"[A-Za-z_$]", init.replace("0x", "").replace("0X", "")):
        raise UnsupportedError(
            f"PTX line {line}: the initializer of device variable `{name}` holds an address or a float "
            f"(`{init.strip()}`); initialize it from the host with cudaMemcpyToSymbol")
    width = _element_bytes(ptx_type)
    data = b"".join((int(v, 0) & ((1 << 8 * width) - 1)).to_bytes(width, "little")
                    for v in re.findall(r"-?(?:0[xX][0-9a-fA-F]+|\d+)", init))
    return (data + bytes(size))[:size]


def split_initializers(ptx: str) -> tuple[str, list[DeviceVariable]]:
    """The PTX with the module's ``.global``/``.const`` initializers taken out and ``.const``
    read as ``.global``; and each such variable with its initial bytes."""
    found: list[DeviceVariable] = []

    def strip(m: re.Match) -> str:
        line = ptx.count("\n", 0, m.start()) + 1
        size = _count(m.group("dims")) * _element_bytes(m.group("type"))
        found.append(DeviceVariable(m.group("name"), size,
                                    _initial_bytes(m.group("init"), m.group("type"), size, m.group("name"), line),
                                    m.group("space") == "const", line))
        return m.group("head").replace(".const", ".global", 1) + ";"

    text = _DECL_RE.sub(strip, ptx)
    return _CONST_USE_RE.sub(lambda m: f"{m.group(1)}.global", text), found
