"""Which parameters of a kernel are floats, read from its mangled name.

A ``.ptx`` file has no CUDA source to read the parameter types from, and PTX declares
every pointer ``.u64``; the Itanium-mangled kernel name still says what each points to:
``_Z5saxpyfPKfPf`` is ``saxpy(float, const float*, float*)``. This reads the builtin
types, pointers, qualifiers and substitutions (``S_``, ``S0_`` ...) of a plain or
namespaced function's parameter list; anything else (templates, classes) gives None,
and the parameters are then integers as PTX declares them.
"""

from __future__ import annotations

import re

_BUILTIN = set("vwbcahstijlmxynofdegz")
"""Itanium's one-letter builtin types (``f`` is float)."""


def _name_end(m: str) -> int | None:
    """Where the function's name ends in ``m`` (after ``_Z``), or None; namespaced names
    (``N2ns1kE``) leave their prefixes to the substitution table, as the ABI says."""
    if m[:1].isdigit():
        n = re.match(r"\d+", m)
        return n.end() + int(n.group())
    return None


def _prefixes(m: str) -> tuple[list[str], int] | None:
    """A nested name ``N...E``: its namespace prefixes (substitution candidates) and its end."""
    i, names = 1, []
    while i < len(m) and m[i] != "E":
        n = re.match(r"\d+", m[i:])
        if n is None:
            return None
        i += n.end() + int(n.group())
        names.append(m[:i])
    return (names[:-1], i + 1) if names else None  # the last is the function's own name


FLOAT_VECTORS = ("float2", "float3", "float4")
"""CUDA's vector types of floats (``host/prelude_vector.h``): an array of them is an array of floats."""


def mangled_float_params(mangled: str) -> list[bool] | None:
    """For each parameter of ``mangled``, whether its type is float or a pointer to float."""
    if not mangled.startswith("_Z"):
        return None
    m = mangled[2:]
    subs: list[bool] = []
    if m.startswith("N"):
        nested = _prefixes(m)
        if nested is None:
            return None
        subs = [False] * len(nested[0])
        i = nested[1]
    else:
        i = _name_end(m)
        if i is None:
            return None
    out = []
    while i < len(m):
        got = _type(m, i, subs)
        if got is None:
            return None
        floating, i = got
        out.append(floating)
    return [] if out == [False] and m.endswith("v") else out


def _type(m: str, i: int, subs: list[bool]) -> tuple[bool, int] | None:
    """One type at ``m[i:]``: (is it float or a pointer/qualified float, where it ends)."""
    c = m[i]
    if c in _BUILTIN:
        return c == "f", i + 1
    if c in "PKVr":
        inner = _type(m, i + 1, subs)
        if inner is None:
            return None
        subs.append(inner[0])  # each pointer or qualified type is a substitution candidate
        return inner
    named = re.match(r"(\d+)", m[i:])
    if named is not None:  # a class by its name: CUDA's float vectors hold floats
        end = i + named.end() + int(named.group(1))
        subs.append(m[i + named.end():end] in FLOAT_VECTORS)
        return subs[-1], end
    s = re.match(r"S(\w*?)_", m[i:])
    if s is not None:
        k = 0 if s.group(1) == "" else int(s.group(1), 36) + 1
        return (subs[k], i + s.end()) if k < len(subs) else None
    return None
