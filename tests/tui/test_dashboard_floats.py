"""Float registers in the dashboard: a register the PTX declares ``.f32`` shows as a float.

The values are chosen so that ``a * x + y`` is exact in float32 (the oracle is NumPy's
float32 arithmetic on them); what is asserted is the register table and the launch
pane's lines as the screen shows them: the loaded inputs and the results as decimals,
the addresses and other integers as integers.
"""

from __future__ import annotations

import asyncio
import json
import textwrap

import numpy as np
import pytest

pytest.importorskip("textual")

from tests.support.dashboard import SIZE, enter_line, wait_until  # noqa: E402

from qwengpu_mlx.core.machine import MACHINES  # noqa: E402
from qwengpu_mlx.core.reference import run_program  # noqa: E402
from qwengpu_mlx.core.vocab import vocab_for  # noqa: E402
from qwengpu_mlx.runtime import LaunchRequest  # noqa: E402
from qwengpu_mlx.runtime.expect import expected_segments  # noqa: E402
from qwengpu_mlx.runtime.launch import bind_request  # noqa: E402
from qwengpu_mlx.tui.app import DashboardApp  # noqa: E402
from qwengpu_mlx.tui.chat import NoChat  # noqa: E402
from qwengpu_mlx.tui.decode import LaunchDecoder  # noqa: E402
from qwengpu_mlx.tui.widgets.machine_pane import registers_table, render_plain  # noqa: E402

AXPY = textwrap.dedent("""\
    __global__ void axpy(float a, const float *x, float *y) {
        int i = threadIdx.x;
        y[i] = a * x[i] + y[i];
    }
    """)
A, X, Y = 2.5, [1.5, -2.25, 4.0, 0.5], [0.25, 1.0, -3.0, 8.0]
ARGS = {"a": str(A), "x": ",".join(map(str, X)), "y": ",".join(map(str, Y))}


def oracle() -> list[str]:
    """a * x + y per lane, in float32 (exact for these values), as the shortest decimals."""
    result = np.float32(A) * np.array(X, np.float32) + np.array(Y, np.float32)
    return [repr(float(v)) for v in result]


def register_rows(text: str) -> dict[str, list[str]]:
    """The register table's rows: ``w0 r3`` -> the lanes' cells."""
    rows = {}
    for line in text.splitlines():
        cells = line.split()
        if len(cells) > 2 and cells[0].startswith("w") and cells[1].startswith("r"):
            rows[f"{cells[0]} {cells[1]}"] = cells[2:]
    return rows


def test_decoder_shows_float_registers_as_floats(tmp_path):
    """The launch the reference implies (the token stream the model must write), decoded."""
    source = tmp_path / "axpy.cu"
    source.write_text(AXPY)
    machine = MACHINES["large"]
    program = bind_request(LaunchRequest(source, ARGS, block=4, machine=machine))
    run = run_program(program, machine, trace=True)
    vocab = vocab_for(machine)
    decoder = LaunchDecoder(program, machine)
    for token_id in [t for s in expected_segments(program, machine, run.trace) for t in s.tokens]:
        decoder.feed(token_id, vocab[token_id])
    rows = register_rows(render_plain(registers_table(decoder.state), 160))
    assert oracle() in rows.values(), rows  # the results, as floats
    # an integer register stays an integer: every cell of some row is a plain integer
    assert any(all(c.lstrip("-").isdigit() for c in cells) for cells in rows.values())
    loads = [line.meaning for line in decoder.lines if line.kind in ("VAL", "VALU")]
    bits = int(np.array([X[1]], np.float32).view(np.uint32)[0])
    assert any(m.endswith(f"= {X[1]} (0x{bits:08x})") for m in loads), loads  # -2.25 loaded, as a float


def test_dashboard_shows_float_registers_as_floats(tmp_path):
    """The same launch through the model, typed into the dashboard."""
    source = tmp_path / "axpy.cu"
    source.write_text(AXPY)
    (tmp_path / "axpy.json").write_text(json.dumps({"kernel": "axpy", "block": 4, "machine": "large",
                                                    "args": {"a": A, "x": X, "y": Y}}))

    async def go():
        async with DashboardApp(chat=NoChat(), show_timing=False).run_test(size=SIZE) as pilot:
            screen = pilot.app.main
            await enter_line(pilot, f"/run {source}")
            await wait_until(pilot, lambda: screen.last_outcome is not None and not screen.running, 300.0,
                             "the launch")
            await pilot.pause(0.5)
            out = screen.last_outcome
            assert out.status == "done" and out.problems == [], (out.error, out.problems)
            rows = register_rows(screen.machine_pane.registers_text())
            assert oracle() in rows.values(), rows
            memory = screen.machine_pane.memory_text()
            for i, value in enumerate(oracle()):
                assert f"y[{i}]" in memory and value in memory

    asyncio.run(go())
