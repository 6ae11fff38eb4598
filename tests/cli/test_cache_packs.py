"""``cache info`` and ``cache clear`` know the native step's packs (``runtime/native_runner.py``).

The pack files are made under the names ``native_runner`` itself gives them, so the test
holds only while the listing finds what the writer writes."""

from __future__ import annotations

import os
import time

from qwengpu_mlx.cli.main import main
from qwengpu_mlx.runtime import native_runner


def _fake_pack(d, key: str, size: int, used: float) -> None:
    arrays, manifest = native_runner._paths(key, d)
    arrays.write_bytes(b"\0" * size)
    manifest.write_text('{"format": 1}')
    os.utime(manifest, (used, used))


def test_cache_info_lists_each_pack_with_its_size_and_clear_removes_them(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QWENGPU_MLX_CACHE", str(tmp_path))
    now = time.time()
    _fake_pack(tmp_path, "1" * 64, 3_000_000, now - 60)
    _fake_pack(tmp_path, "2" * 64, 5_000_000, now)
    (tmp_path / ".native-pack-3333.abc.npz").write_bytes(b"\0" * 1_000_000)  # a killed write's temporary
    (tmp_path / "native").mkdir()  # the built native module: not a pack, left alone
    assert main(["cache", "info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if "native step packs" in line)
    assert lines[head].startswith("2 native step packs, 9.0 MB")  # both packs, their manifests, the leftover
    assert lines[head + 1].split()[:3] == ["native-pack-" + "2" * 16 + ".npz", "5.0", "MB"]  # most recent first
    assert lines[head + 2].split()[:3] == ["native-pack-" + "1" * 16 + ".npz", "3.0", "MB"]
    assert "1 leftover pack files" in lines[head + 3]
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.startswith(f"cleared {tmp_path}: 5 files, 9.0 MB")
    assert [p.name for p in tmp_path.iterdir()] == ["native"]


def test_cache_info_says_nothing_of_packs_where_there_are_none(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QWENGPU_MLX_CACHE", str(tmp_path))
    assert main(["cache", "info"]) == 0
    assert "pack" not in capsys.readouterr().out
