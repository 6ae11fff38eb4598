"""Test session set-up: a private circuit cache, so tests never read or write the user's."""

import os
import shutil
import tempfile

_OWN_CACHE = None


def pytest_configure(config):
    global _OWN_CACHE
    if "QWENGPU_MLX_CACHE" not in os.environ:
        _OWN_CACHE = tempfile.mkdtemp(prefix="qwengpu-mlx-test-cache-")
        os.environ["QWENGPU_MLX_CACHE"] = _OWN_CACHE


def pytest_unconfigure(config):
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def store():
    """One circuit store for the whole session: each machine's circuit is built once."""
    from qwengpu_mlx.runtime import CircuitStore

    return CircuitStore()
