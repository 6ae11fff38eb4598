"""The names errors give ``__shared__`` variables are the ones the user wrote, not PTX's mangled ones."""

from __future__ import annotations

import pytest

from qwengpu_mlx.host.srcloc import source_name


@pytest.mark.parametrize("ptx_name, written", [
    ("_ZZ3bigPiE3buf", "buf"),  # a static in big(int*): digits inside the function's part
    ("_ZZ6reducePiPKiE1s", "s"),
    ("_ZZ4sumsPiE11partial_sum", "partial_sum"),
    ("_ZL7scratch", "scratch"),  # file-local
    ("tile", "tile"),  # extern "C" or a plain PTX name
])
def test_source_name_reads_the_identifier_back(ptx_name, written):
    assert source_name(ptx_name) == written
