"""Circuit matrices stored in the smallest exact format (``splice/storage.py``).

The expected format of each matrix comes from the formats' definitions, not from the
code: an affine group holds ``s q + beta`` with ``q < 2^bits`` (``beta = 0`` outside the
threshold-read modules), a scale in bfloat16 holds 8 significant bits and in float16
11; e2m1 holds {0, 0.5, 1, 1.5, 2, 3, 4, 6} times one power of two per 32 weights, e4m3
three mantissa bits. Every stored matrix is read back with ``mx.dequantize``."""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest

from qwengpu_mlx.splice.sizes import format_bytes
from qwengpu_mlx.splice.storage import StorageTally, compact_layer, exact_storage, quantization_entry

LAYER = "language_model.model.layers.30."
UP = LAYER + "mlp.up_proj.weight"  # exact zeros read downstream: no bias
GATE = LAYER + "mlp.gate_proj.weight"  # read through thresholds: a bias allowed


def _at(values: dict[tuple[int, int], float], shape=(4, 256)) -> mx.array:
    w = np.zeros(shape, np.float32)
    for (r, c), v in values.items():
        w[r, c] = v
    return mx.array(w)


def _back(name: str, fmt: str, stored: dict[str, mx.array]) -> mx.array:
    """The float32 matrix the stored tensors give under mlx's own dequantization."""
    m = name[: -len(".weight")]
    if fmt.startswith("affine"):
        bits, gs = int(fmt[6]), int(fmt.split("/")[1][1:])
        return mx.dequantize(stored[name], stored[m + ".scales"], stored[m + ".biases"], group_size=gs, bits=bits,
                             dtype=mx.float32)
    if fmt.startswith("mx"):
        return mx.dequantize(stored[name], stored[m + ".scales"], group_size=32, bits=int(fmt[-1]), mode=fmt,
                             dtype=mx.float32)
    return stored[name].astype(mx.float32)


CASES = [
    (UP, {}, "affine2/g128/bfloat16"),                                     # all-zero groups
    (UP, {(0, 3): 5.0, (1, 200): -7.0, (2, 9): 3.0, (2, 10): 6.0}, "affine2/g128/bfloat16"),  # {0, s, 2s} per group
    (UP, {(0, 1): 1.0, (0, 2): 2.0, (0, 3): 3.0, (0, 4): 5.0}, "affine4/g128/bfloat16"),  # 5 > 3: four bits
    (UP, {(0, 1): 1.0, (0, 2): 5.0, (0, 130): 3.0}, "affine4/g128/bfloat16"),  # {1, 5} in one group of any size
    (UP, {(3, 40): 1000.0}, "affine2/g128/bfloat16"),                      # 1111101000b: 7 bits
    (UP, {(3, 40): 1025.0}, "affine2/g128/float16"),                       # 10000000001b: 11 bits
    (UP, {(3, 40): 12345.0}, "affine2/g128/float32"),                      # 14 bits: a threshold alone
    (GATE, {(0, 1): 1.0, (0, 2): -1.0}, "affine2/g128/bfloat16"),          # {-1, 0, 1} = -1 + {0, 1, 2}
    (UP, {(0, 1): 1.0, (0, 2): -1.0, (1, 5): 6.0}, "mxfp4"),               # both signs, no bias: e2m1
    (UP, {(0, 1): 7.0, (0, 2): -1.25}, "mxfp8"),                           # 1.75 * 4 and -1.25: e4m3
    (UP, {(0, 1): 1.0, (0, 2): -(2.0 ** -20)}, "bfloat16"),                # one scale per 32 cannot span 2^20
    (UP, {(0, 1): 1.0 + 2.0 ** -8, (0, 2): -1.0}, "float32"),              # nine significant bits
]


@pytest.mark.parametrize("name, values, fmt", CASES)
def test_each_matrix_takes_the_smallest_format_that_holds_it(name, values, fmt):
    w = _at(values)
    got, stored = exact_storage(name, w)
    assert got == fmt
    assert mx.array_equal(_back(name, got, stored), w).item()
    assert sum(t.nbytes for t in stored.values()) == format_bytes(got, *w.shape)  # the size model's bytes


@pytest.mark.parametrize("name, values, fmt", [c for c in CASES if c[2].startswith("affine")])
def test_biases_are_zero_outside_the_threshold_read_modules(name, values, fmt):
    _, stored = exact_storage(name, _at(values))
    biases = stored[name[: -len(".weight")] + ".biases"]
    assert (name == GATE) or not bool(mx.any(biases != 0))


def test_a_quantized_circuit_matrix_computes_the_dense_product():
    """What ``QuantizedLinear`` computes from the stored tensors, against the dense float32
    product: zero rows exactly zero, the rest to float32 rounding."""
    rng = np.random.default_rng(0)
    w = np.zeros((64, 512), np.float32)
    w[rng.integers(0, 48, 300), rng.integers(0, 512, 300)] = rng.choice([3.0, 6.0, 9.0], 300)
    fmt, stored = exact_storage(UP, mx.array(w))
    m = UP[: -len(".weight")]
    lin = nn.QuantizedLinear(512, 64, bias=False, group_size=int(fmt.split("/")[1][1:]), bits=int(fmt[6]))
    lin.update({"weight": stored[UP], "scales": stored[m + ".scales"], "biases": stored[m + ".biases"]})
    x = mx.array(rng.standard_normal((3, 512)).astype(np.float32))
    got, want = lin(x), x @ mx.array(w).T
    assert bool(mx.all(got[:, 48:] == 0))
    assert bool(mx.allclose(got, want, rtol=1e-6, atol=0))


def test_only_linear_weights_are_compacted_and_the_tally_counts_them():
    tally = StorageTally()
    norm = LAYER + "input_layernorm.weight"
    out = compact_layer({UP: _at({(0, 0): 1.0, (1, 1): 2.0}), norm: mx.ones((256,))}, tally)
    assert out[norm].dtype == mx.float32
    assert set(out) == {UP, UP[:-7] + ".scales", UP[:-7] + ".biases", norm}
    fmt = "affine2/g128/bfloat16"
    assert tally.matrices[fmt] == 1 and tally.parameters[fmt] == 4 * 256 and tally.quantized
    assert tally.nbytes[fmt] == format_bytes(fmt, 4, 256)


def test_the_config_keeps_a_quantized_base_s_own_entry():
    own = {"group_size": 64, "bits": 4, "language_model.model.layers.0.mlp.gate_proj": {"bits": 8}}
    assert quantization_entry({"quantization": own}, StorageTally()) == {"quantization": own}
    assert quantization_entry({}, StorageTally()) == {}


def test_a_threshold_read_matrix_takes_a_bias_only_in_the_groups_that_need_one():
    w = _at({(0, 1): 1.0, (0, 2): -1.0, (0, 130): -5.0})  # group 0 both signs, group 1 one sign
    fmt, stored = exact_storage(GATE, w)
    assert fmt == "affine2/g128/bfloat16" and mx.array_equal(_back(GATE, fmt, stored), w).item()
    biases = stored[GATE[: -len(".weight")] + ".biases"]
    assert biases[0].tolist() == [-1.0, 0.0]


def test_the_exactness_check_reads_every_non_zero_group_and_one_empty_group():
    """``mx.dequantize`` works group by group and every empty group packs alike, so one stands for all."""
    from qwengpu_mlx.splice.storage import checked_groups

    w = np.zeros((3, 128), np.float32)
    w[1, 3], w[2, 100] = 1.0, -2.0
    assert [list(a) for a in checked_groups(w, 32)] == [[1, 2, 0], [0, 3, 0]]  # (1, 0), (2, 3), then (0, 0) empty
    assert [list(a) for a in checked_groups(np.ones((2, 64), np.float32), 64)] == [[0, 1], [0, 0]]
    assert [list(a) for a in checked_groups(np.zeros((2, 64), np.float32), 32)] == [[0], [0]]


def test_a_value_no_format_holds_is_still_caught_in_a_mostly_empty_matrix():
    """2^24 + 2 (24 significant bits) in one row of an otherwise empty matrix: no affine
    or microscaled format and not bfloat16 hold it, so it stays float32."""
    w = np.zeros((512, 256), np.float32)
    w[300, 17] = 2.0 ** 24 + 2.0  # representable in float32 (even), not in 8 significant bits
    w[300, 18] = 3.0
    fmt, stored = exact_storage(UP, mx.array(w))
    back = stored[UP]
    assert fmt == "float32" and np.array_equal(np.array(back), w)


def test_gives_back_catches_a_wrong_value_in_a_used_group_and_in_an_empty_one():
    from qwengpu_mlx.splice.storage import gives_back

    w = np.zeros((4, 256), np.float32)
    w[1, :64] = np.arange(64) % 5  # one used group of 64, the rest empty
    packed, scales, biases = mx.quantize(mx.array(w), group_size=64, bits=4)
    exact = np.array(mx.dequantize(packed, scales, biases, group_size=64, bits=4, dtype=mx.float32))
    assert gives_back(exact, packed, scales, biases, group_size=64, bits=4)
    off = exact.copy()
    off[1, 10] += 0.5
    assert not gives_back(off, packed, scales, biases, group_size=64, bits=4)
    stray = exact.copy()
    stray[3, 200] = 1.0  # where the written matrix holds an empty group
    assert not gives_back(stray, packed, scales, biases, group_size=64, bits=4)
