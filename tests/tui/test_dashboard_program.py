"""Whole CUDA programs in the dashboard: ``/run prog.cu [-- ARGS]`` on a file with ``main()``.

Driven through Textual's pilot, each launch on the embedded circuit (the large machine, as
``qwengpu-mlx run prog.cu``), checked against the reference interpreter. What is asserted
is what the screen shows: the program's stdout and stderr in the transcript, each launch
in the launch pane as it ran (its header, its tokens, its summary, then the next launch),
the exit status; escape ends a program whose host code never returns. The expected
output is worked out here from what the programs mean, not from the dashboard's code.
"""

from __future__ import annotations

import asyncio
import os
import re
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("textual")

from tests.support.dashboard import SIZE, enter_line, wait_until  # noqa: E402

from qwengpu_mlx.tui.app import DashboardApp  # noqa: E402
from qwengpu_mlx.tui.chat import NoChat  # noqa: E402
from qwengpu_mlx.tui.commands import CommandError, ProgramRequest, parse  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROGRAM_TIMEOUT = 300.0


def finished(screen) -> bool:
    return screen.last_outcome is not None and not screen.running


async def run_program(pilot, line: str):
    """Type ``line``, wait for the program's end; the outcome."""
    screen = pilot.app.main
    screen.last_outcome = None
    await enter_line(pilot, line)
    await wait_until(pilot, lambda: finished(screen), PROGRAM_TIMEOUT, f"{line} to end")
    await pilot.pause(0.3)
    return screen.last_outcome


def entries_after(screen, marker: str) -> list[tuple[str, str]]:
    """The transcript's entries after the last one equal to ``marker`` (the line typed)."""
    entries = screen.transcript.entries
    start = max(i for i, (_, text) in enumerate(entries) if text == marker)
    return entries[start + 1:]


def two_kernels_oracle() -> tuple[list[int], list[int]]:
    """examples/programs/two_kernels.cu: data[i] = i - 3 squared in place, then out[i] = data[i] +
    data[i + 1] (0 past the end)."""
    squares = [(i - 3) ** 2 for i in range(8)]
    sums = [squares[i] + (squares[i + 1] if i + 1 < 8 else 0) for i in range(8)]
    return squares, sums


def test_program_requests_parse():
    req = parse("/run examples/programs/argv_scale.cu -- 5 3").run
    assert isinstance(req, ProgramRequest) and req.args == ["5", "3"] and req.machine == "large"
    assert parse("/run two_kernels").run.source.name == "two_kernels.cu"  # a program's name alone
    assert parse("/run two_kernels").run.args == []
    with pytest.raises(CommandError, match="arguments follow --"):
        parse("/run argv_scale 5 3")
    assert parse("/run dot").run.__class__.__name__ == "RunRequest"  # a kernel file stays a launch


def launch_sections(pane_text: str) -> list[tuple[str, list[str], str]]:
    """The launch pane of a program: per launch, (header, its token lines, its summary line)."""
    sections, current = [], None
    for raw in pane_text.splitlines():
        line = raw.strip()
        if re.fullmatch(r"launch \d+: \w+", line):
            current = [line, [], None]
            sections.append(current)
        elif current is not None and re.match(r"launch \d+: \w+<<<", line):
            current[2] = line
        elif current is not None and current[2] is None and re.match(r"\d+\s+\d+\s+\S", line):
            current[1].append(line)
    return [tuple(s) for s in sections]


def test_program_runs_with_each_launch_shown_as_it_ran():
    squares, sums = two_kernels_oracle()

    async def go():
        async with DashboardApp(chat=NoChat(), show_timing=False).run_test(size=SIZE) as pilot:
            screen = pilot.app.main
            line = "/run examples/programs/two_kernels.cu"
            out = await run_program(pilot, line)
            assert out.status == "done" and out.exit_status == 0, (out.error, out.exit_status)
            shown = entries_after(screen, line)
            stdout = [text for kind, text in shown if kind == "stdout"]
            assert stdout == ["squares: " + " ".join(map(str, squares)), "sums: " + " ".join(map(str, sums))]
            texts = [text for _, text in shown]
            assert texts[-1] == "program exited with status 0 (2 launches)"
            # the launches in the order they ran, before the lines the program printed after them
            summaries = [text for kind, text in shown if text.startswith("launch ")]
            assert [s.split(":")[0:2] for s in summaries] == [["launch 1", " squareAll<<<2, 4>>>"],
                                                                ["launch 2", " addNeighbour<<<1, 8>>>"]]
            assert all(s.endswith(", exact") for s in summaries), summaries
            assert texts.index(summaries[1]) < texts.index(stdout[0])
            # the launch pane: each launch's header, every token it wrote, its summary, then the next
            sections = launch_sections(screen.launch_pane.plain_text())
            assert [(h, s is not None) for h, _, s in sections] == [("launch 1: squareAll", True),
                                                                    ("launch 2: addNeighbour", True)]
            for (header, tokens, summary), said in zip(sections, summaries):
                assert summary == said
                count = int(re.search(r"(\d+) tokens", summary).group(1))
                indices = [int(t.split()[0]) for t in tokens]  # a record's chunks complete its header's line
                assert indices[0] == 0 and indices[-1] == count - 1 and indices == sorted(indices)
                assert tokens[-1].split()[2] == "STOP"  # each launch ran to its end before the next began
            status = screen.status_bar.plain()
            assert "kernel: addNeighbour" in status and "check: exact" in status and "done" in status
            assert "model: embedded circuit (large machine)" in status  # where a program's launches run

            # its arguments after --, its stderr and its exit status
            out = await run_program(pilot, "/run argv_scale -- 5 3")
            shown = entries_after(screen, "/run argv_scale -- 5 3")
            assert [text for kind, text in shown if kind == "stdout"] == [" ".join(str(3 * i) for i in range(5))]
            assert out.exit_status == 0
            out = await run_program(pilot, "/run argv_scale")
            shown = entries_after(screen, "/run argv_scale")
            errors = [text for kind, text in shown if kind == "stderr"]
            assert len(errors) == 1 and errors[0].startswith("usage: ") and errors[0].endswith(" N FACTOR")
            assert out.exit_status == 2 and ("error", "program exited with status 2 (0 launches)") in shown
            assert "exit status 2" in screen.status_bar.plain()

    asyncio.run(go())


SPIN = textwrap.dedent("""\
    // One launch, its result printed, then host code that never returns: only a cancel ends it.
    #include <cstdio>
    __global__ void twice(int *x) { x[threadIdx.x] *= 2; }
    int main() {
      int h[4] = {1, 2, 3, 4}, *d;
      cudaMalloc(&d, sizeof h);
      cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
      twice<<<1, 4>>>(d);
      cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
      printf("%d %d %d %d\\n", h[0], h[1], h[2], h[3]);
      for (volatile unsigned long i = 0;; i++) {}
    }
    """)


def running_programs(name: str) -> list[int]:
    """Processes whose command line runs an executable called ``name`` (the program's build)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if Path(argv0).name == name:
            found.append(int(pid))
    return found


def test_escape_ends_a_program_and_the_next_one_runs(tmp_path):
    name = f"spin_{os.getpid()}"
    source = tmp_path / f"{name}.cu"
    source.write_text(SPIN)

    async def go():
        async with DashboardApp(chat=NoChat(), show_timing=False).run_test(size=SIZE) as pilot:
            screen = pilot.app.main
            line = f"/run {source}"
            await enter_line(pilot, line)
            await wait_until(pilot, lambda: ("stdout", "2 4 6 8") in screen.transcript.entries, PROGRAM_TIMEOUT,
                             "the program's line")
            assert screen.running and running_programs(name)
            await pilot.press("escape")
            await pilot.pause(0.2)
            assert not screen.running and screen.last_outcome.status == "cancelled"
            assert entries_after(screen, line)[-1] == ("info", "program cancelled")
            assert "cancelled" in screen.status_bar.plain()
            await wait_until(pilot, lambda: not running_programs(name), 10.0, "the program's process to end")
            out = await run_program(pilot, "/run argv_scale -- 2 7")  # the launch process goes on
            assert out.exit_status == 0
            assert [t for k, t in entries_after(screen, "/run argv_scale -- 2 7") if k == "stdout"] == ["0 7"]

    asyncio.run(go())
