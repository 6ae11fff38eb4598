"""Every conformance oracle in one dict, gathered from the topic modules.

``oracles_base`` holds the helpers and the first oracles; each topic module
(``oracles_warps``, ``oracles_narrow``, ``oracles_atomics``, ``oracles_launch``) keeps
its own ``ORACLES``. ``tests/host/test_conformance.py`` pairs this dict with
``examples/kernels``; a name defined twice is an error, not a silent override.
"""

from __future__ import annotations

from tests.support import (oracles_atomics, oracles_base, oracles_float, oracles_float_io, oracles_int64,
                           oracles_launch, oracles_narrow, oracles_warps)
from tests.support.oracles_base import TEST_ORACLES, Oracle, machine_of

__all__ = ["ORACLES", "TEST_ORACLES", "Oracle", "machine_of"]


def _merged(*modules) -> dict[str, Oracle]:
    merged: dict[str, Oracle] = {}
    for module in modules:
        twice = merged.keys() & module.ORACLES.keys()
        if twice:
            raise ValueError(f"{module.__name__} defines oracles already defined: {sorted(twice)}")
        merged.update(module.ORACLES)
    return merged


ORACLES: dict[str, Oracle] = _merged(oracles_base, oracles_warps, oracles_narrow, oracles_atomics, oracles_launch,
                                     oracles_float, oracles_float_io, oracles_int64)
