"""A kernel's printf rewritten into machine stores (``host.program_printf``): what clang
emits for it (a ``.local`` frame, a ``vprintf`` call) is gone, a record buffer is declared,
and PTX without printf is left as it is. What the records print is tested end to end in
tests/runtime/test_program_errors.py and test_program_examples.py."""

from __future__ import annotations

from qwengpu_mlx.host.frontend import find_clang
from qwengpu_mlx.host.program_build import compile_device
from qwengpu_mlx.host.program_printf import BUFFER, COUNTER, RECORDS, rewrite_printf


def test_ptx_without_printf_is_unchanged():
    ptx = ".version 7.0\n.target sm_75\n.visible .entry k()\n{\n\tret;\n}\n"
    assert rewrite_printf(ptx) == ptx


def test_a_printf_becomes_record_stores(tmp_path):
    find_clang()
    src = tmp_path / "p.cu"
    src.write_text('#include <cstdio>\n__global__ void k(int *a) {\n'
                   '  printf("%d and %d\\n", threadIdx.x, a[threadIdx.x]);\n}\nint main() { return 0; }\n')
    code = compile_device(src)
    assert "vprintf" not in code.ptx and ".local" not in code.ptx and "call" not in code.ptx
    names = {v.name: v for v in code.variables}
    assert names[COUNTER].size == 4
    assert names[BUFFER].size == 4 * 3 * RECORDS  # the format's address and two ints a record
    fmt = next(v for v in code.variables if v.initial.startswith(b"%d and %d"))
    assert fmt.initial == b"%d and %d\n\0"
