"""float32 values as a user writes and reads them: decimals in, shortest decimals out.

A ``float`` parameter's value or a ``float*`` array's element lives in the machine as its
IEEE-754 binary32 bit pattern. This module is the one place the interface turns text into
those bits and back (``--arg x=1.5,-2.25,3e-3``, launch files, ``run``'s and ``--json``'s
outputs); it never computes a kernel's float.

Decimals are rounded once, exactly, to the nearest binary32 (ties to even, subnormals
kept, overflow to infinity) from their exact rational value: going through a binary64
first (``np.float32(float(text))``) rounds twice and can be one unit off. A float32 is
printed as the shortest decimal that reads back as the same float32 (NumPy's ``str`` of
a ``float32``, Dragon4 in its unique mode): ``0.1``, not ``0.10000000149011612``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction

import numpy as np

from qwengpu_mlx.core.isa import ArrayBinding

M32 = 0xFFFFFFFF
SIGN = 0x80000000
INF_BITS = 0x7F800000
NAN_BITS = 0x7FC00000  # the NaN an argument "nan" binds: the default quiet NaN of C and NumPy (what a GPU
# writes for a NaN its arithmetic makes is 0x7FFFFFFF, docs/FLOATS.md)

_SPECIAL = {"nan": NAN_BITS, "+nan": NAN_BITS, "-nan": NAN_BITS | SIGN, "inf": INF_BITS, "+inf": INF_BITS,
            "-inf": INF_BITS | SIGN, "infinity": INF_BITS, "+infinity": INF_BITS, "-infinity": INF_BITS | SIGN}
_PATTERN = re.compile(r"0[fF][0-9a-fA-F]{8}")  # PTX's spelling of a float's bits: 0f3FC00000 is 1.5


@dataclass
class FloatArray(ArrayBinding):
    """A ``float*`` parameter: each word is a binary32 bit pattern, read out as a float."""


def rational_bits(q: Fraction, negative: bool = False) -> int:
    """The binary32 nearest to the exact value ``q`` (round to nearest, ties to even).

    ``negative`` gives a zero its sign (``-0``), which a rational cannot carry."""
    sign = SIGN if q < 0 or (q == 0 and negative) else 0
    q = abs(q)
    if q == 0:
        return sign
    e = q.numerator.bit_length() - q.denominator.bit_length()  # 2**e <= q < 2**(e+2)
    if q < Fraction(2) ** e:
        e -= 1
    if q >= Fraction(2) ** (e + 1):
        e += 1
    e = max(e, -126)  # below the normal range the step stays 2**-149: subnormals
    m = round(q / Fraction(2) ** (e - 23))  # Fraction rounds half to even
    if m == 1 << 24:
        e, m = e + 1, m >> 1
    if e > 127:
        return sign | INF_BITS
    if m < 1 << 23:  # subnormal (or rounded to zero)
        return sign | m
    return sign | ((e + 127) << 23) | (m - (1 << 23))


def bits_value(bits: int) -> Fraction | None:
    """The exact value of a binary32 pattern; None for NaN and the infinities."""
    bits &= M32
    exponent, mantissa = (bits >> 23) & 0xFF, bits & 0x7FFFFF
    if exponent == 0xFF:
        return None
    value = Fraction(mantissa, 1 << 23) * Fraction(2) ** -126 if exponent == 0 else \
        Fraction((1 << 23) | mantissa, 1 << 23) * Fraction(2) ** (exponent - 127)
    return -value if bits & SIGN else value


def float32_bits(value) -> int:
    """A value a user gave for a float (text, int, Python float, ``Decimal``) -> its binary32 bits.

    Text is a decimal (``1.5``, ``-2.25``, ``3e-3``, ``-0``), ``nan``/``inf``/``-inf``, or a
    bit pattern as PTX writes it (``0f7FC00001``); ``ValueError`` for anything else."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    if isinstance(value, int):
        return rational_bits(Fraction(value))
    if isinstance(value, float):  # exactly the binary64 given: one rounding from it
        return float32_bits(Decimal(value)) if value == value else NAN_BITS
    if isinstance(value, Decimal):
        if value.is_nan():
            return NAN_BITS | (SIGN if value.is_signed() else 0)
        if value.is_infinite():
            return INF_BITS | (SIGN if value.is_signed() else 0)
        return rational_bits(Fraction(value), value.is_signed())
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _SPECIAL:
            return _SPECIAL[text.lower()]
        if _PATTERN.fullmatch(text):
            return int(text[2:], 16)
        try:
            return float32_bits(Decimal(text))
        except InvalidOperation:
            raise ValueError(f"{value!r} is not a decimal number") from None
    raise ValueError(f"{value!r} is not a number")


def float32_text(bits: int) -> str:
    """The shortest decimal that reads back as this binary32 (``1.5``, ``-0.0``, ``1e-45``,
    ``nan``, ``inf``, ``-inf``); a NaN's payload and sign are not shown, as C's ``%g``."""
    f = np.uint32(bits & M32).view(np.float32)
    if np.isnan(f):
        return "nan"
    if np.isinf(f):
        return str(f)
    return repr(float(str(f)))  # NumPy's shortest digits, spelled as Python spells a float (16777216.0)


def float32_json(bits: int) -> float | str:
    """The value ``--json`` writes: a number whose text is the shortest decimal (which reads
    back as this float32), or the strings ``"nan"``, ``"inf"``, ``"-inf"``."""
    text = float32_text(bits)
    return text if text in ("nan", "inf", "-inf") else float(text)


def _float_names(program) -> set[str]:
    return {a.name for a in program.arrays if isinstance(a, FloatArray)}


def outputs_text(program, name: str, words: list[int]) -> str:
    """One array's values as ``run`` prints them: a ``float*`` array's as shortest decimals
    (``[1.5, -0.0, nan]``), any other's as the integers they are."""
    if name not in _float_names(program):
        return str(words)
    return "[" + ", ".join(float32_text(w) for w in words) + "]"


def outputs_json(program, outputs: dict[str, list[int]]) -> dict[str, list]:
    """The outputs as ``--json`` writes them: a ``float*`` array's values as JSON numbers
    (NaN and the infinities as strings), any other's as integers."""
    floats = _float_names(program)
    return {name: [float32_json(w) for w in words] if name in floats else words for name, words in outputs.items()}


def float_words(program) -> set[int]:
    """The memory words of the program's ``float*`` arrays (shown as floats, not integers)."""
    return {a.base + i for a in program.arrays if isinstance(a, FloatArray) for i in range(a.length)}
