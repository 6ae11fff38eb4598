"""clang's PTX from the disk cache: reused only while every file clang read is unchanged."""

from __future__ import annotations

import pytest

from qwengpu_mlx.core.errors import FrontendError
from qwengpu_mlx.host import frontend, ptx_cache
from qwengpu_mlx.host.frontend import cuda_to_ptx
from tests.support.cli import needs_clang

KERNEL = '#include "scale.h"\n__global__ void k(int *a) { a[threadIdx.x] *= SCALE; }\n'


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A private cache folder, and a count of clang's runs."""
    monkeypatch.setenv("QWENGPU_MLX_CACHE", str(tmp_path / "cache"))
    runs = []
    real = frontend._run

    def counted(cmd, tool, source):
        runs.append(cmd)
        return real(cmd, tool, source)

    monkeypatch.setattr(frontend, "_run", counted)
    return runs


def kernel_files(tmp_path, scale: int):
    (tmp_path / "scale.h").write_text(f"#define SCALE {scale}\n")
    src = tmp_path / "k.cu"
    src.write_text(KERNEL)
    return src


@needs_clang
def test_the_second_compile_is_read_from_the_cache(tmp_path, own_cache):
    src = kernel_files(tmp_path, 3)
    first = cuda_to_ptx(src)
    assert cuda_to_ptx(src) == first
    assert len(own_cache) == 1
    assert "mul.lo.s32" in first or "shl" in first or "3" in first


@needs_clang
def test_a_changed_header_compiles_again(tmp_path, own_cache):
    src = kernel_files(tmp_path, 3)
    three = cuda_to_ptx(src)
    kernel_files(tmp_path, 5)  # the source's bytes are the same; only its header changed
    five = cuda_to_ptx(src)
    assert len(own_cache) == 2 and five != three
    assert "5" in five.split(".entry")[1]


@needs_clang
def test_a_changed_source_compiles_again(tmp_path, own_cache):
    src = kernel_files(tmp_path, 3)
    cuda_to_ptx(src)
    src.write_text(KERNEL.replace("*=", "+="))
    assert "add.s32" in cuda_to_ptx(src)
    assert len(own_cache) == 2


@needs_clang
def test_a_corrupt_entry_is_a_miss(tmp_path, own_cache):
    src = kernel_files(tmp_path, 3)
    first = cuda_to_ptx(src)
    for entry in ptx_cache.ptx_dir().glob("*.json"):
        entry.write_text("{not json")
    assert cuda_to_ptx(src) == first
    assert len(own_cache) == 2


@needs_clang
def test_errors_are_not_cached(tmp_path, own_cache):
    src = tmp_path / "bad.cu"
    src.write_text("__global__ void k(int *a) { a[0] = undeclared; }\n")
    for _ in range(2):
        with pytest.raises(FrontendError, match="bad.cu:1:"):
            cuda_to_ptx(src)
    assert len(own_cache) == 2
    assert not list(ptx_cache.ptx_dir().glob("*.json"))


def test_make_dependencies_keeps_escaped_spaces():
    rule = "-: my\\ dir/k.cu /usr/include/a.h \\\n  /work/b\\#c.h\n"
    assert ptx_cache.make_dependencies(rule) == ["my dir/k.cu", "/usr/include/a.h", "/work/b#c.h"]
