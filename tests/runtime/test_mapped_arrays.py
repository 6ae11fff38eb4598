"""An ``.npz`` read in place (``runtime.mapped_arrays``) gives NumPy's own arrays: the same
names, dtypes, shapes, memory orders and values as ``np.load``, as read-only views; an
archive it cannot view is refused as a ValueError (the pack's reader then builds anew)."""

from __future__ import annotations

import numpy as np
import pytest

from qwengpu_mlx.runtime.mapped_arrays import map_file, npz_views


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {"floats": rng.standard_normal(1001).astype(np.float32), "ints": rng.integers(-9, 9, 77, dtype=np.int32),
            "matrix": rng.standard_normal((5, 3)), "fortran": np.asfortranarray(rng.standard_normal((4, 6))),
            "scalar": np.array(3, np.int64), "empty": np.zeros((0, 7), np.int64), "bytes": np.arange(5, dtype=np.uint8)}


def test_views_are_numpy_s_arrays(tmp_path):
    path = tmp_path / "pack.npz"
    np.savez(path, **_arrays())
    views = npz_views(map_file(path))
    with np.load(path) as z:
        assert sorted(views) == sorted(z.files)
        for name in z.files:
            got, want = views[name], z[name]
            assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), name
            assert got.flags.f_contiguous == want.flags.f_contiguous and not got.flags.writeable


def test_what_cannot_be_viewed_is_refused(tmp_path):
    packed = tmp_path / "packed.npz"
    np.savez_compressed(packed, **_arrays())
    objects = tmp_path / "objects.npz"
    np.savez(objects, o=np.array([{"a": 1}], dtype=object))
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip archive" * 10)
    for path in (packed, objects, junk):
        with pytest.raises(ValueError):
            npz_views(map_file(path))
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    with pytest.raises(ValueError):
        map_file(empty)
