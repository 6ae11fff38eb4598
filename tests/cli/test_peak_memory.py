"""A run's peak memory: the process's resident peak, whatever MLX allocated.

``run`` reported MLX's allocator peak alone, 0.0 GB for a kernel's launch on the native
step (which allocates no MLX array). The resident figure is checked against the kernel's
own account of the process (``/proc/self/status``'s ``VmHWM``, Linux) and against memory
a fresh process is known to have touched.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from qwengpu_mlx.cli.peak_memory import PeakMemory, peak_memory, resident_bytes

STATUS = Path("/proc/self/status")
ROOT = Path(__file__).resolve().parents[2]


def test_ru_maxrss_is_bytes_on_macos_and_kibibytes_elsewhere():
    assert resident_bytes(3, "darwin") == 3
    assert resident_bytes(3, "linux") == 3 * 1024


def _high_water_bytes() -> int:
    return int(re.search(r"VmHWM:\s+(\d+) kB", STATUS.read_text()).group(1)) * 1024


SLACK = 8 * 2 ** 20
"""The two accounts' difference allowed: Linux keeps a thread's resident count apart and
adds it to the process's now and then, so the two marks may differ by a few pages."""


@pytest.mark.skipif(not STATUS.exists(), reason="no /proc: Linux's account of the process")
def test_the_resident_peak_is_the_kernels_high_water_mark():
    before = _high_water_bytes()
    peak = peak_memory().resident_gb * 1e9
    after = _high_water_bytes()
    assert before - SLACK <= peak <= after + SLACK


def test_a_process_that_touched_memory_reports_at_least_that_much():
    touched = 256 * 2 ** 20
    code = ("import json, numpy as np\n"
            "from qwengpu_mlx.cli.peak_memory import peak_memory\n"
            f"a = np.ones({touched} // 8)\n"  # every page written: resident
            "print(json.dumps(peak_memory().figures()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    figures = json.loads(out.stdout)
    assert figures["peak_resident_gb"] >= touched / 1e9
    assert figures["peak_mlx_gb"] == 0.0  # no MLX array: MLX's figure alone said the run took nothing


def test_the_summary_line_names_what_each_figure_measures():
    line = PeakMemory(0.4126, 0.0).line()
    assert line == "Peak memory: 0.413 GB resident (the process); MLX's arrays: 0.000 GB"
