"""Circuit matrices stored in the smallest exact format (``splice/storage.py``).

The expected format of each matrix comes from the formats' definitions, not from the
code: e2m1 holds {0, 0.5, 1, 1.5, 2, 3, 4, 6} times one power of two per 32 weights,
e4m3 three mantissa bits, bfloat16 seven."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from qwengpu_mlx.splice.storage import StorageTally, compact_layer, exact_storage, quantization_entry

NAME = "language_model.model.layers.30.mlp.gate_proj.weight"


def _sparse(values: list[float], shape=(8, 64), seed=0) -> mx.array:
    rng = np.random.default_rng(seed)
    w = np.zeros(shape, np.float32)
    w.flat[rng.choice(w.size, len(values), replace=False)] = values
    return mx.array(w)


@pytest.mark.parametrize("values, fmt", [
    ([1.0, -0.5, 6.0, 3.0, -1.5], "mxfp4"),            # e2m1 values at scale 1
    ([2.0 ** -9, -3 * 2.0 ** -10], "mxfp4"),            # the same at another power of two
    ([7.0, -1.25, 0.5], "mxfp8"),                       # 7 = 1.75 * 4 and 1.25 need e4m3
    ([17.0, -100.0], "bfloat16"),                       # 17 = 1.0001b * 16: four mantissa bits
    ([1.0 + 2.0 ** -8, 1.0], "float32"),                # eight mantissa bits
    ([1.0 / 3.0], "float32"),
])
def test_each_matrix_takes_the_smallest_format_that_holds_it(values, fmt):
    w = _sparse(values)
    got, stored = exact_storage(NAME, w)
    assert got == fmt
    if fmt.startswith("mx"):
        bits = 4 if fmt == "mxfp4" else 8
        back = mx.dequantize(stored[NAME], stored[NAME[:-7] + ".scales"], group_size=32, bits=bits, mode=fmt,
                             dtype=mx.float32)
    else:
        back = stored[NAME].astype(mx.float32)
    assert mx.array_equal(back, w).item()


def test_a_group_mixing_far_apart_scales_is_not_microscaled():
    w = np.zeros((4, 32), np.float32)
    w[0, 0], w[0, 1] = 1.0, 2.0 ** -20  # e4m3 spans 2^-9..448: one scale per 32 weights cannot hold both
    assert exact_storage(NAME, mx.array(w))[0] == "bfloat16"


def test_only_linear_weights_are_compacted_and_the_tally_counts_them():
    tally = StorageTally()
    norm = "language_model.model.layers.30.input_layernorm.weight"
    out = compact_layer({NAME: _sparse([1.0, 2.0]), norm: mx.ones((64,))}, tally)
    assert out[norm].dtype == mx.float32
    assert set(out) == {NAME, NAME[:-7] + ".scales", norm}
    assert tally.matrices["mxfp4"] == 1 and tally.parameters["mxfp4"] == 8 * 64 and tally.quantized


def test_the_config_keeps_a_quantized_base_s_own_entry():
    own = {"group_size": 64, "bits": 4, "language_model.model.layers.0.mlp.gate_proj": {"bits": 8}}
    assert quantization_entry({"quantization": own}, StorageTally()) == {"quantization": own}
    assert quantization_entry({}, StorageTally()) == {}
