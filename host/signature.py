"""Kernel parameter names and kinds, read from the CUDA source.

PTX names parameters ``_Z3dotPKiS0_Pii_param_0``; users pass ``--arg a=1,2,3`` with the
names they wrote. We read the ``__global__`` function's parameter list from the
source text (a light scan, not a C++ parser) and match it to the PTX parameters by
position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from qwengpu_mlx.host.mangled_params import mangled_float_params


@dataclass(frozen=True)
class KernelParam:
    """One parameter; ``bits``/``signed``: its element type's (a pointer's) or its own;
    ``floating``: that type is ``float`` (values are binary32 bit patterns, given and
    shown as decimals)."""

    name: str
    pointer: bool
    ctype: str
    bits: int = 32
    signed: bool = True
    floating: bool = False


def element_type(ctype: str) -> tuple[int, bool]:
    """``(bits, signed)`` of what a parameter's C type points to (or is): 8 for ``char``,
    ``bool`` and ``[u]int8_t``, 16 for ``short`` and ``[u]int16_t``, 64 for ``long``,
    ``size_t`` and ``[u]int64_t``, else 32. Plain
    ``char`` is signed, as in CUDA."""
    words = re.findall(r"\w+", ctype)
    unsigned = "unsigned" in words or any(w in ("uint8_t", "uint16_t", "bool") + UNSIGNED64 for w in words)
    if any(w in ("long",) + SIGNED64 + UNSIGNED64 for w in words):
        return 64, not unsigned
    if any(w in ("char", "int8_t", "uint8_t", "bool") for w in words):
        return 8, not unsigned
    if any(w in ("short", "int16_t", "uint16_t") for w in words):
        return 16, not unsigned
    return 32, not unsigned


SIGNED64 = ("int64_t", "ptrdiff_t", "ssize_t", "intptr_t", "longlong")
UNSIGNED64 = ("uint64_t", "size_t", "uintptr_t", "ulonglong")
"""The 64-bit integer type names besides ``long`` (LP64, as CUDA on Linux): ``host/wide64.py``."""


def is_float_type(ctype: str) -> bool:
    """The C type names ``float`` (``float``, ``const float*``, ``float* __restrict__``) or
    CUDA's vector of floats (``float4*``: an array of floats, four a vector)."""
    return bool({"float", "float2", "float3", "float4"} & set(re.findall(r"\w+", ctype)))


_IDENT = r"[^\W\d]\w*"
"""A C++ identifier, Unicode letters included (clang accepts ``int* été``)."""


def _strip_comments(text: str) -> str:
    """Comments, and the attributes between ``__global__`` and the name that hold parentheses."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"__launch_bounds__\s*\([^()]*\)", " ", text)
    return re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", " ", text)


def cuda_kernel_params(source: str, kernel: str) -> list[KernelParam] | None:
    """Parameters of ``__global__ ... kernel(...)`` in ``source``, or None if not found.

    ``kernel`` may be qualified (``a::b::k``, from the mangled name): the source declares
    it by its last component inside its namespaces."""
    text = _strip_comments(source)
    kernel = kernel.split("::")[-1]
    found = None
    for m in re.finditer(r"__global__[^;{(]*?\b" + re.escape(kernel) + r"\s*\(", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        plist = text[m.end() : i - 1].strip()
        rest = text[i:].lstrip()
        is_definition = rest.startswith("{")
        if found is None or is_definition:
            found = plist
        if is_definition:
            break
    if found is None:
        return None
    if found in ("", "void"):
        return []
    params = []
    for raw in _split_top_level(found):
        raw = raw.split("=")[0].strip()
        ident = re.findall(_IDENT, raw)
        if not ident or ident[-1] in _TYPE_WORDS:
            return None  # an unnamed parameter: fall back to PTX names
        pointer = "*" in raw or "[" in raw
        ctype = raw[: raw.rfind(ident[-1])]
        bits, signed = element_type(ctype)
        params.append(KernelParam(ident[-1], pointer, raw, bits, signed, is_float_type(ctype)))
    return params


_TYPE_WORDS = {"int", "unsigned", "signed", "char", "short", "long", "const", "volatile",
               "__restrict__", "float", "double", "bool", "void", "size_t", "uint32_t", "int32_t",
               "int64_t", "uint64_t", "ptrdiff_t"}


def _split_top_level(plist: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in plist:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def with_float_types(params: list[KernelParam], ptx_params: list, mangled: str) -> list[KernelParam]:
    """``params`` with ``floating`` set where the compiled kernel says float: a ``.param
    .f32`` scalar, or a ``float`` in the mangled name (a pointer's, which PTX declares
    ``.u64``; a typedef's, which the source scan cannot see)."""
    from_name = mangled_float_params(mangled)
    if from_name is None or len(from_name) != len(params):
        from_name = [False] * len(params)
    return [replace(p, floating=True) if (p.floating or named or (not p.pointer and pp.type == "f32")) else p
            for p, pp, named in zip(params, ptx_params, from_name)]


def ptx_param_name(name: str) -> str:
    """A readable name for a PTX-only parameter: ``..._param_2`` becomes ``param_2``."""
    m = re.search(r"(param_\d+)$", name)
    return m.group(1) if m else name
