"""Fixtures of the runtime's tests."""

from __future__ import annotations

import pytest

from qwengpu_mlx.runtime import native


@pytest.fixture(scope="module")
def module():
    """The native step's compiled module: the tests of the native path fail, never skip,
    where it did not build (every supported machine builds it)."""
    found = native.load()
    assert found.module is not None, f"the native step did not build here: {found.reason}"
    return found.module
