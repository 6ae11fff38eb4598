"""Oracles of the conformance kernels for 2-D and 3-D launches and dynamic shared memory.

Written from what each kernel *means*, as ``oracles_base`` explains; registered with
this module's own ``oracle`` decorator and merged into ``tests.support.oracles.ORACLES``.
"""

from __future__ import annotations

import numpy as np

from tests.support.oracles_base import Oracle, arrays, result, scalar

ORACLES: dict[str, Oracle] = {}


def oracle(fn: Oracle) -> Oracle:
    ORACLES[fn.__name__] = fn
    return fn


def dim3(value) -> tuple[int, int, int]:
    """A launch file's ``block``/``grid`` (an int or a list) as CUDA's dim3 (x, y, z)."""
    parts = [value] if isinstance(value, int) else list(value)
    return tuple(parts + [1] * (3 - len(parts)))  # type: ignore[return-value]


def cuda_threads(spec: dict):
    """Every thread of the launch as (threadIdx, blockIdx), each an (x, y, z) triple, in the
    order CUDA numbers them (x fastest); for kernels whose meaning is per-thread."""
    (bx, by, bz), (gx, gy, gz) = dim3(spec["block"]), dim3(spec["grid"])
    for cz in range(gz):
        for cy in range(gy):
            for cx in range(gx):
                for z in range(bz):
                    for y in range(by):
                        for x in range(bx):
                            yield (x, y, z), (cx, cy, cz)


@oracle
def transpose_2d(spec):
    A = arrays(spec)
    rows, cols = scalar(spec, "rows"), scalar(spec, "cols")
    A["out"] = A["in"].reshape(rows, cols).T.reshape(-1)
    return result(A)


@oracle
def stencil_2d(spec):
    A = arrays(spec)
    w, h = scalar(spec, "w"), scalar(spec, "h")
    img = np.pad(A["in"].reshape(h, w), 1)  # zeros outside the image
    lap = 4 * img[1:-1, 1:-1] - img[:-2, 1:-1] - img[2:, 1:-1] - img[1:-1, :-2] - img[1:-1, 2:]
    A["out"] = lap.reshape(-1)
    return result(A)


@oracle
def index_3d(spec):
    A = arrays(spec)
    (bx, by, bz), (gx, gy, gz) = dim3(spec["block"]), dim3(spec["grid"])
    for k, ((x, y, z), (cx, cy, cz)) in enumerate(cuda_threads(spec)):
        A["ids"][k] = x + 10 * y + 100 * z + 1000 * cx + 10000 * cy + 100000 * cz
    A["dims"][:] = [bx, by, bz, gx, gy, gz]
    return result(A)


@oracle
def grid_rows_y(spec):
    A = arrays(spec)
    cols = scalar(spec, "cols")
    m = A["m"].reshape(-1, cols)
    scaled = m * np.arange(1, len(m) + 1)[:, None]
    A["scaled"] = scaled.reshape(-1)
    A["rowsum"] = scaled.sum(axis=1)
    return result(A)


@oracle
def dyn_shared_reduce(spec):
    A = arrays(spec)
    n = dim3(spec["block"])[0]
    A["sums"] = A["x"].reshape(-1, n).sum(axis=1)
    return result(A)


@oracle
def grid_dim_y(spec):
    A = arrays(spec)
    rows, cols = scalar(spec, "rows"), scalar(spec, "cols")
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    A["a"] = (2 * A["a"].reshape(rows, cols) + 100 * r + c).reshape(-1)
    return result(A)


@oracle
def tile_transpose_2d(spec):
    A = arrays(spec)
    rows, cols = scalar(spec, "rows"), scalar(spec, "cols")
    A["out"] = A["in"].reshape(rows, cols).T.reshape(-1)
    return result(A)
