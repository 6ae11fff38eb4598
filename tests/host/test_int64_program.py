"""A whole program with 64-bit values (``examples/programs/grid_stride64.cu``): ``size_t``
kernel parameters from ``main()``, grid-stride loops over ``size_t`` indices, a ``long
long`` array the host copies back, and ``%zu``/``%lld``/``%llx`` in the host's and a
kernel's ``printf``; its stdout against what the program means, computed here in Python.
"""

from __future__ import annotations

from pathlib import Path

from qwengpu_mlx.cli.main import main
from tests.support.cli import needs_clang

pytestmark = needs_clang

PROGRAM = Path(__file__).resolve().parents[2] / "examples" / "programs" / "grid_stride64.cu"


def grid_stride64_stdout() -> str:
    """The program's meaning: y = 3x + y over n = 20 values, sums of squares strided by the
    8 threads of a 2 x 4 grid (each a long long), the last thread's printed by a kernel."""
    n, threads = 20, 8
    x = [i * 9973 + 40000 for i in range(n)]
    y = [3 * a + (i - 10) for i, a in enumerate(x)]
    partial = [sum(x[i] * x[i] for i in range(t, n, threads)) for t in range(threads)]
    total = sum(partial)
    lines = [f"y[{i}] = {y[i]}" for i in range(0, n, 5)]
    lines.append(f"thread {threads - 1} of {threads}: partial sum {partial[-1]}")
    lines.append(f"sum of squares of {n} values: {total} ({total:#x})")
    return "".join(line + "\n" for line in lines)


def test_grid_stride64_program_output(capfd):
    status = main(["run", str(PROGRAM), "--backend", "reference", "--quiet"])
    out, err = capfd.readouterr()
    assert status == 0, err
    assert out == grid_stride64_stdout(), err


FORMATS = """\\
#include <cstdio>
#include <cuda_runtime.h>
__global__ void show(int *p, long a, unsigned long b, size_t n) {
  if (threadIdx.x == 0) printf("%ld %lu %zu\\n", a, b, n);
  if (threadIdx.x == 0) printf("%zd %lx %p\\n", (ptrdiff_t)(a - 3), b, p + 1);
}
int main() {
  int *d;
  cudaMalloc(&d, 16);
  show<<<1, 2>>>(d, -5000000000L, 0xFEDCBA9876543210UL, (size_t)1 << 40);
  cudaDeviceSynchronize();
  printf("host: %p\\n", (void *)(d + 1));
  return 0;
}
"""


def test_a_kernels_printf_of_64_bit_arguments(tmp_path, capfd):
    """%ld %lu %zu %zd %lx of 64-bit values beyond 32 bits, and %p of a device pointer, which
    the kernel prints as the host program sees it."""
    path = tmp_path / "formats.cu"
    path.write_text(FORMATS)
    status = main(["run", str(path), "--backend", "reference", "--quiet"])
    out, err = capfd.readouterr()
    assert status == 0, err
    lines = out.splitlines()
    host_pointer = lines[-1].split(": ")[1]
    assert lines[0] == f"{-5000000000} {0xFEDCBA9876543210} {1 << 40}"
    assert lines[1] == f"{-5000000003} {0xFEDCBA9876543210:x} {host_pointer}"
    assert len(lines) == 3


def test_a_kernels_printf_of_a_string_is_refused_at_its_line(tmp_path, capfd):
    """%s would print the string's address as text: refused at the call (a GPU prints the characters)."""
    path = tmp_path / "named.cu"
    path.write_text('#include <cstdio>\n__global__ void k(int n) {\n  printf("%d%%\\n", n);\n'
                    '  printf("hello %s %d\\n", "x", n);\n}\nint main() { k<<<1, 1>>>(3); return 0; }\n')
    status = main(["run", str(path), "--backend", "reference", "--quiet"])
    out, err = capfd.readouterr()
    assert status == 1 and out == ""
    assert err.startswith("error: named.cu:4: ") and "%s" in err, err
