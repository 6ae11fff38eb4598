"""CUDA's math functions that come from libdevice are refused at the user's call, by name.

CUDA's headers declare them all, so a kernel calling ``ldexpf`` or ``frexpf`` compiles
with nvcc; here, without a declaration, clang said ``no matching function`` (after
``#include <math.h>``, whose host declarations are not callable from a kernel) or
``undeclared identifier``, neither saying why. Each is declared as CUDA declares it and
refused at the call, with ``<math.h>`` included or not, as the other libdevice functions
are.
"""

from __future__ import annotations

import pytest

from qwengpu_mlx.core.errors import FrontendError
from qwengpu_mlx.core.machine import LARGE_MACHINE
from tests.support.cli import cu, needs_clang
from tests.support.launching import reference

CALLS = ["ldexpf(v, 3)", "scalbnf(v, 2)", "frexpf(v, &e)", "modff(v, &w)", "ilogbf(v) + 0.5f", "logbf(v)",
         "nextafterf(v, 1.0f)", "erfcf(v)", "lgammaf(v)", "asinhf(v)", "rhypotf(v, v)", "__frsqrt_rn(v)",
         "__log2f(v)"]


@needs_clang
@pytest.mark.parametrize("include", ["", "#include <math.h>"])
@pytest.mark.parametrize("call", CALLS)
def test_the_call_is_refused_by_name(tmp_path, call, include):
    name = call.split("(")[0]
    code = (f"{include}\n__global__ void k(const float* x, float* y) {{\n    int e; float w;\n    float v = x[threadIdx.x];\n"
            f"    y[threadIdx.x] = {call};\n}}\n")
    with pytest.raises(FrontendError) as refused:
        reference(cu(tmp_path, code, "k.cu"), machine=LARGE_MACHINE, args={"x": [1.0] * 4, "y": [0.0] * 4})
    assert "k.cu:5" in str(refused.value)
    assert f"{name} is not supported: it comes from libdevice" in str(refused.value)
