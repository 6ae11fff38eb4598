"""What the float routines do not compute is refused at the user's own ``.cu`` line.

Rounding modes other than nearest-even, ``.ftz`` (fast-math's flush to zero), ``.sat``,
the approximate division and square root, and ``setp`` combining a predicate: each
named, with the way around it, never run with other semantics. The instructions are
written as inline PTX, the one way clang emits them without fast-math.
"""

from __future__ import annotations

import pytest

from qwengpu_mlx.core.errors import QwenGpuError
from tests.support.cli import cu, needs_clang
from tests.support.launching import reference

KERNEL = """__global__ void k(const float* a, float* b) {{
    int i = threadIdx.x;
    float r;
    asm("{asm}" : "=f"(r) : "f"(a[i]), "f"(a[i]));
    b[i] = r;
}}
"""

CASES = [  # (inline PTX, what the refusal must say)
    ("add.rz.f32 %0, %1, %2;", "rounding mode .rz"),
    ("mul.rm.f32 %0, %1, %2;", "rounding mode .rm"),
    ("add.ftz.f32 %0, %1, %2;", ".ftz"),
    ("mul.sat.f32 %0, %1, %2;", ".sat"),
    ("div.full.f32 %0, %1, %2;", "approximate division"),
    ("div.approx.f32 %0, %1, %2;", "approximate division"),
    ("sqrt.approx.f32 %0, %1;", "approximate square root"),
    ("rcp.approx.f32 %0, %1;", "approximate reciprocal"),
]


@needs_clang
@pytest.mark.parametrize("ptx, says", CASES, ids=[c[0].split()[0] for c in CASES])
def test_refused_at_the_users_line(tmp_path, ptx, says):
    path = cu(tmp_path, KERNEL.format(asm=ptx))
    with pytest.raises(QwenGpuError) as e:
        reference(path, args={"a": [1.5, 2.5], "b": [0, 0]}, block=2)
    text = str(e.value)
    assert "kernel.cu:4" in text and says in text, text
