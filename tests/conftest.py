"""Test session set-up: a private circuit cache, so tests never read or write the user's."""

import os
import tempfile


def pytest_configure(config):
    if "QWENGPU_MLX_CACHE" not in os.environ or os.environ.get("QWENGPU_MLX_TEST_OWN_CACHE"):
        os.environ["QWENGPU_MLX_CACHE"] = tempfile.mkdtemp(prefix="qwengpu-mlx-test-cache-")
        os.environ["QWENGPU_MLX_TEST_OWN_CACHE"] = "1"
