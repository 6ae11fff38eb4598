"""The pieces that splice an affine-quantized base (``splice/quantized.py``).

Oracle: ``mx.dequantize`` (what mlx-lm's quantized layers compute with) on what the
splice packs; the values asked for are written here, not taken from the code."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from qwengpu_mlx.splice.quantized import QuantizedBaseError, affine_format, pack_exact


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_launch_levels_pack_exactly_at_every_width(bits):
    rng = np.random.default_rng(bits)
    rows = rng.choice([-1.0, 0.0, 1.0], size=(6, 128)).astype(np.float32)
    rows[2, 64:] = 0.0
    rows[3, 70] = 2.0 ** 24  # a group of its own levels: {0, ONE}
    rows[3, 64:70] = rows[3, 71:128] = 0.0
    packed, scales, biases = pack_exact(rows, 32, bits, mx.bfloat16)
    back = mx.dequantize(packed, scales, biases, group_size=32, bits=bits)
    assert back.dtype == mx.bfloat16
    assert np.array_equal(np.array(back.astype(mx.float32)), rows)


def test_a_group_holding_a_bit_and_one_is_refused_by_name():
    rows = np.zeros((2, 64), np.float32)
    rows[1, 3], rows[1, 4] = 1.0, 2.0 ** 24  # one scale and bias cannot give 0, 1 and 2^24 in 4 bits
    with pytest.raises(QuantizedBaseError, match="1 of 2 launch rows .* 4-bit .* groups of 32"):
        pack_exact(rows, 32, 4, mx.bfloat16)


def test_a_microscaled_base_is_refused_with_its_mode_named():
    w = mx.random.normal((8, 64))
    packed, scales = mx.quantize(w, group_size=32, bits=4, mode="mxfp4")
    with pytest.raises(QuantizedBaseError, match="microscaled .* only affine-quantized"):
        affine_format(packed, scales, None, 64, "layers.0.mlp.gate_proj")
    q = mx.quantize(w, group_size=32, bits=8)
    assert affine_format(*q, 64, "x") == (32, 8)


def _layout(base_hidden: int):
    from qwengpu_mlx.splice.layout import SpliceLayout

    base = {"hidden_size": base_hidden, "num_hidden_layers": 4, "vocab_size": 10, "intermediate_size": 512,
            "linear_num_key_heads": 4, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
            "linear_value_head_dim": 32, "full_attention_interval": 4}
    return SpliceLayout(base, dict(base, hidden_size=256, num_hidden_layers=5), 3)


def _launch_rows() -> mx.array:
    E = np.zeros((3, 256), np.float32)
    E[:, 0], E[1, 1:5], E[2, 200] = 2.0 ** 24, -1.0, 1.0
    return mx.array(E)


def test_the_circuit_s_wide_dims_get_groups_of_their_own():
    from qwengpu_mlx.splice.weights import circuit_dims

    lay = _layout(96)  # combined 384: the circuit at [96, 352), one 32-group past it, none of 64 or 128
    dims = circuit_dims(lay, _launch_rows(), 32)
    assert dims[0] == 352 and np.array_equal(dims[1:], 96 + np.arange(1, 256))  # past the circuit, group-aligned
    assert np.array_equal(circuit_dims(lay, _launch_rows(), None), dims)  # a dense base: the same, where room is
    with pytest.raises(QuantizedBaseError, match="wide dims"):
        circuit_dims(lay, _launch_rows(), 64)  # 352 -> 384, + 64 > 384


def test_threshold_dims_take_the_room_left_in_the_widest_groups():
    from qwengpu_mlx.splice.weights import circuit_dims

    lay = _layout(256)  # combined 1024: the circuit at [256, 512), four 128-groups past it
    dims = circuit_dims(lay, _launch_rows(), None, extra=[7, 0, 9, 11, 13])
    moved = {int(c): int(d) for c, d in enumerate(dims) if d != 256 + c}
    assert moved == {0: 512, 7: 640, 9: 768, 11: 896}  # ONE's dim first, then extra in order, room for 4
    assert len(set(dims.tolist())) == 256


def test_wide_columns_rank_the_in_projections_by_significant_bits():
    from qwengpu_mlx.splice.weights import significant_bits, wide_columns

    v = np.array([0.0, 1.0, 3.0, 2.0 ** -13, 12345.0, -17.0, -1.5 * 2.0 ** 30], np.float32)
    assert significant_bits(v).tolist() == [0, 1, 2, 1, 14, 5, 2]
    gate = np.zeros((4, 16), np.float32)
    gate[0, 3], gate[1, 1], gate[2, 2], gate[3, 5] = 12345.0, 5.0, 17.0, 32768.0  # 14, 3, 5, 1 bits
    down = np.zeros((16, 4), np.float32)
    down[9, 0] = 12345.0  # an output projection's rows are not the residual's columns
    part = {"language_model.model.layers.3.mlp.gate_proj.weight": mx.array(gate),
            "language_model.model.layers.3.mlp.down_proj.weight": mx.array(down)}
    assert wide_columns([part]).tolist() == [3, 2]
