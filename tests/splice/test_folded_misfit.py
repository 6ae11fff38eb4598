"""A machine whose circuit outgrows Qwen3.5-2B's shape is refused as a splice misfit (a
message for the person who asked for it, with the machine that fits), never as the
compiler's DoesNotFit traceback: ``chat --machine large`` met exactly that before the large
machine had a dense form that fits (``machine_circuit.fewest_dims``); the store here is a
stand-in for any machine that outgrows the shape."""

from __future__ import annotations

import pytest

from qwengpu_mlx.compiler.sizing import DoesNotFit, Misfit
from qwengpu_mlx.core.machine import LARGE_MACHINE
from qwengpu_mlx.splice.build import SpliceMisfit
from qwengpu_mlx.splice.errors import SPLICE_ERRORS
from qwengpu_mlx.splice.folded import folded_circuit


class _OutgrownStore:
    """A circuit store whose circuit needs 2,412 residual dims of the shape's 2,048."""

    def __init__(self, directory):
        self.directory = directory
        self.log = lambda message: None

    def compiled(self, machine, shape=None):
        raise DoesNotFit([Misfit("hidden", 2412, 2048, "residual 2412 dims > 2048")])


def test_outgrown_machine_is_a_splice_refusal(tmp_path):
    with pytest.raises(SpliceMisfit) as caught:
        folded_circuit(_OutgrownStore(tmp_path), LARGE_MACHINE)
    message = str(caught.value)
    assert "large machine" in message and "2412 dims > 2048" in message
    assert "--machine published" in message
    assert isinstance(caught.value, SPLICE_ERRORS)  # what the chat and the CLI report without a traceback
