"""The probe launch a GPU recurrence kernel must pass before it is trusted (``gpu_trust``).

A dot product with a branch and atomics over one warp: its launch stores registers and
memory words through the recurrent state of several layers and reads them back, so a
kernel that rounds the state, mixes up heads or drops a gate writes other tokens.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

PROBE_SOURCE = """\
__global__ void probe(const int* a, const int* b, int* out, int n) {
    int i = threadIdx.x;
    if (i < n) atomicAdd(out, a[i] * b[i] - i);
}
"""
PROBE_ARGS = {"a": [3, -1, 4, 1], "b": [5, 9, -2, 6], "out": [7], "n": 3}


def probe_program(machine):
    """The probe kernel compiled and bound for ``machine`` (one block of 4 threads)."""
    from qwengpu_mlx.host.launch import bind, compile_kernel

    with tempfile.TemporaryDirectory(prefix="qwengpu-probe-") as tmp:
        source = Path(tmp) / "probe.cu"
        source.write_text(PROBE_SOURCE)
        compiled = compile_kernel(source, "probe")
    return bind(compiled, PROBE_ARGS, block=4, grid=1, machine=machine)
