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
    # the native token step is built once, here, so no test's output shows the build line
    from qwengpu_mlx.runtime import native

    native.load(log=lambda line: None)


def pytest_unconfigure(config):
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def store():
    """One circuit store for the whole session: each machine's circuit is built once."""
    from qwengpu_mlx.runtime import CircuitStore

    return CircuitStore()


@pytest.fixture(scope="session")
def example_launch(store):
    """name -> (spec, program, launch) of an example kernel run once through the model, checked.

    Tests that need a real launch share these (a launch costs seconds of CPU). ``name`` is an
    example (``examples/kernels``) or a test-only kernel with its spec (``tests/kernels_machine``)."""
    import json
    from pathlib import Path

    from qwengpu_mlx.core.machine import PUBLISHED_MACHINE
    from tests.support.launching import bound_program, on_runner

    here = Path(__file__).resolve().parent
    folders = (here.parent / "examples" / "kernels", here / "kernels_machine")  # examples first, then test-only
    done: dict = {}

    def get(name: str):
        if name not in done:
            kernels = next(f for f in folders if (f / f"{name}.json").exists())
            spec = json.loads((kernels / f"{name}.json").read_text())
            prog = bound_program(kernels / f"{name}.cu", spec["kernel"], args=spec["args"], block=spec["block"],
                        grid=spec["grid"])
            done[name] = (spec, prog, on_runner(prog, store.runner(PUBLISHED_MACHINE), check=True))
        return done[name]

    return get
