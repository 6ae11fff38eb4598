"""Oracles of the conformance kernels for 2-D and 3-D launches and dynamic shared memory.

Written from what each kernel *means*, as ``oracles_base`` explains; registered with
this module's own ``oracle`` decorator and merged into ``tests.support.oracles.ORACLES``.
"""

from __future__ import annotations

from tests.support.oracles_base import Oracle

ORACLES: dict[str, Oracle] = {}


def oracle(fn: Oracle) -> Oracle:
    ORACLES[fn.__name__] = fn
    return fn
