"""Float values at the interface: decimals in (the nearest float32), shortest decimals out.

The oracles are NumPy's float32 (its neighbours, ``nextafter``) and exact rationals:
a decimal's float32 is the one nearest to it, ties to the even one, and what is printed
is the fewest digits that read back as the same float32.
"""

from __future__ import annotations

import random
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from qwengpu_mlx.core.float32 import float32_bits, float32_json, float32_text
from qwengpu_mlx.host.mangled_params import mangled_float_params

F32_MAX = Fraction(2) ** 128 - Fraction(2) ** 104


def value_of(word: int) -> np.float32:
    return np.uint32(word).view(np.float32)


def exact(f: np.float32) -> Fraction:
    return Fraction(float(f))  # a float32 is exactly a binary64


def is_nearest(q: Fraction, word: int) -> bool:
    """``word`` is the float32 nearest to ``q``, a tie going to the even significand."""
    f = value_of(word)
    if np.isinf(f):
        return abs(q) >= F32_MAX + Fraction(2) ** 103  # at or past the midpoint to 2**128
    if abs(q) >= F32_MAX + Fraction(2) ** 103:
        return False
    here = abs(q - exact(f))
    for toward in (np.float32(np.inf), np.float32(-np.inf)):
        g = np.nextafter(f, toward)
        d = abs(q - exact(g)) if np.isfinite(g) else None
        if d is not None and (d < here or (d == here and word & 1)):
            return False
    return True


def random_decimal(rng: random.Random) -> str:
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25)))
    exponent = rng.choice([rng.randint(-50, 40), rng.randint(-47, -36), rng.randint(36, 40)])
    return f"{rng.choice(['', '-'])}{digits[0]}.{digits[1:]}e{exponent}"


def test_a_decimal_becomes_its_nearest_float32():
    rng = random.Random(7)
    for _ in range(3000):
        text = random_decimal(rng)
        word = float32_bits(text)
        assert is_nearest(Fraction(Decimal(text)), word), (text, hex(word))
        if value_of(word) != 0:
            assert (word >> 31) == text.startswith("-")


def test_one_rounding_where_binary64_would_round_twice():
    """Just above the midpoint of 1.0f and the float after it: binary64 lands on the
    midpoint (then ties to 1.0f); the decimal itself is nearer the upper float."""
    midpoint = 1 + Fraction(1, 2 ** 24)
    text = str(Decimal(midpoint.numerator) / Decimal(midpoint.denominator) + Decimal(2) ** -80)
    assert np.float32(float(text)) == np.float32(1.0)  # the double rounding
    assert value_of(float32_bits(text)) == np.nextafter(np.float32(1.0), np.float32(2.0))


@pytest.mark.parametrize("text, word", [
    ("nan", 0x7FC00000), ("inf", 0x7F800000), ("-inf", 0xFF800000), ("-0", 0x80000000), ("0", 0),
    ("1e-45", 0x00000001), ("7e-46", 0), ("3.4028235e38", 0x7F7FFFFF), ("3.4028236e38", 0x7F800000),
    ("1.5", 0x3FC00000), ("0f7FC00001", 0x7FC00001),
])
def test_the_named_values_and_the_edges(text, word):
    assert float32_bits(text) == word


@pytest.mark.parametrize("bad", ["abc", "1.5.2", "", "0x10"])
def test_text_that_is_no_number_is_refused(bad):
    with pytest.raises(ValueError):
        float32_bits(bad)


def test_a_float32_prints_as_its_shortest_decimal():
    rng = random.Random(11)
    words = [rng.getrandbits(32) for _ in range(3000)] + [1, 0x80000000, 0x7F7FFFFF, 0x00800000, 0x3DCCCCCD]
    for word in words:
        f = value_of(word)
        if not np.isfinite(f):
            continue
        text = float32_text(word)
        assert float32_bits(text) == word, (hex(word), text)
        digits = Decimal(text).normalize().as_tuple().digits
        if len(digits) > 1:  # one digit fewer, rounded down or up, is another float32
            shorter = Decimal(text).normalize()
            places = len(digits) - 1
            for rounding in ("ROUND_FLOOR", "ROUND_CEILING"):
                candidate = shorter.scaleb(-shorter.adjusted()).quantize(
                    Decimal(1).scaleb(-(places - 1)), rounding=rounding).scaleb(shorter.adjusted())
                assert float32_bits(str(candidate)) != word, (hex(word), text, candidate)


def test_json_numbers_and_the_strings_for_nan_and_infinities():
    assert float32_json(0x3DCCCCCD) == 0.1 and repr(float32_json(0x3DCCCCCD)) == "0.1"
    assert [float32_json(w) for w in (0x7FC00000, 0x7F800000, 0xFF800000)] == ["nan", "inf", "-inf"]
    assert float32_text(0x80000000) == "-0.0" and float32_text(0x4B800000) == "16777216.0"


@pytest.mark.parametrize("mangled, floats", [
    ("_Z5saxpyfPKfPf", [True, True, True]),
    ("_Z3dotPKiS0_Pii", [False, False, False, False]),
    ("_Z1kPKfS0_S_", [True, True, True]),  # S_ is const float, S0_ const float*
    ("_ZN2ns1kEPfS0_", [True, True]),  # S_ is the namespace, S0_ float*
    ("_Z1kv", []),
    ("_Z1kIfEvPT_", None),  # a template: not read
])
def test_a_mangled_name_says_which_parameters_are_floats(mangled, floats):
    assert mangled_float_params(mangled) == floats
