"""The Textual dashboard (``qwengpu-mlx tui``), driven by Textual's Pilot.

Launches run on the embedded circuit (no download); one dot-product launch takes about
20 s on the CI CPU, so each test that needs one runs it once. The snapshot is taken
with ``show_timing=False`` (no tokens/s or durations) and a fixed terminal size;
after an intended change of the layout or of the launch tokens, refresh it with
``pytest tests/tui/test_dashboard.py --snapshot-update`` and look at the new SVG.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

pytest.importorskip("textual")

from qwengpu_mlx.core.machine import DEFAULT_MACHINE, MACHINES  # noqa: E402
from qwengpu_mlx.core.vocab import chunk_value, record_end  # noqa: E402
from qwengpu_mlx.runtime import CircuitStore, QuietEvents  # noqa: E402
from qwengpu_mlx.tui.app import DashboardApp  # noqa: E402
from qwengpu_mlx.tui.chat import NEEDS_CHECKPOINT, ChatBackend, NoChat, chat_backend  # noqa: E402
from qwengpu_mlx.tui.commands import CommandError, parse  # noqa: E402
from qwengpu_mlx.tui.launcher import execute_launch  # noqa: E402
from qwengpu_mlx.tui.screens.kernel_picker import KernelPicker  # noqa: E402
from qwengpu_mlx.tui.widgets.token_stream import wrap_rows  # noqa: E402
from textual.widgets import Input, OptionList  # noqa: E402
from tests.support.dashboard import LAUNCH_TIMEOUT, SIZE, type_command, wait_until  # noqa: E402
from tests.support.oracles_float import ORACLES  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DOT = "/run examples/kernels/dot.cu a=1,2,3 b=4,5,6 out=0 n=3"


KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"


def run_async(coro):
    return asyncio.run(coro)


def launch_finished(screen) -> bool:
    return screen.last_outcome is not None and not screen.running


def mlx_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("qwengpu-mlx")]


# --------------------------------------------------------------------------- pure parts


def test_command_parsing():
    cmd = parse("/run examples/kernels/dot.cu a=1,2,3 b=4,5,6 out=0 n=3 --block 8 --grid 2")
    assert cmd.name == "run"
    req = cmd.run
    assert req.source.name == "dot.cu" and req.source.is_file()
    assert req.args == {"a": "1,2,3", "b": "4,5,6", "out": "0", "n": "3"}
    assert (req.block, req.grid) == (8, 2)
    # a bare kernel name takes the kernel's .json arguments and geometry
    req = parse("/run grid_shared_reduce").run
    assert req.source.name == "grid_shared_reduce.cu" and (req.block, req.grid) == (8, 2)
    assert req.args["out"] == [0, 0]
    assert parse("/check off").flag is False and parse("/check on").flag is True
    assert parse("hello there").name == "chat"
    for bad in ("/run", "/run nosuchkernel.cu", "/run dot x", "/run dot --blk 2", "/check maybe", "/frobnicate"):
        with pytest.raises(CommandError):
            parse(bad)


def test_argument_errors_use_the_dashboards_syntax():
    """The binder words its errors for the command line (``--arg``); /run takes NAME=values."""
    def error(line: str) -> str:
        out = execute_launch(parse(line).run, QuietEvents(), threading.Event(), check=False, store=CircuitStore())
        assert out.status == "error" and "--arg" not in out.error, out.error
        return out.error

    assert error("/run examples/kernels/dot.cu a=1,2,3") == (
        "kernel `dot` takes parameters (a, b, out, n); missing b, out, n; "
        "e.g. /run dot.cu a=1,2,3 b=1,2,3 out=1,2,3 n=3 (or /run dot for its .json arguments)")
    assert error("/run examples/kernels/dot.cu a=1,2,3 b=4,5,6 out=0 n=1,2") == (
        "n: `n` is a scalar (int n); give one integer")


def test_chat_seam():
    from qwengpu_mlx.core.errors import QwenGpuError

    backend = chat_backend(None)
    assert isinstance(backend, NoChat) and isinstance(backend, ChatBackend)
    assert not backend.available
    assert "".join(e.text for e in backend.reply("hello")) == NEEDS_CHECKPOINT
    # a model that cannot be opened is an error before the dashboard starts, never a silent fallback
    with pytest.raises(QwenGpuError, match="no/such-dir"):
        chat_backend("no/such-dir")


def test_cli_entry_parser():
    from qwengpu_mlx.cli.parser import build_parser
    from qwengpu_mlx.tui import cli_entry

    p = build_parser()
    ns = p.parse_args(["tui"])
    assert ns.command == "tui" and ns.model is None and ns.run is None and ns.check is True
    ns = p.parse_args(["tui", "--model", "some/dir", "--run", DOT, "--no-check"])
    assert (ns.model, ns.run, ns.check) == ("some/dir", DOT, False)
    assert callable(cli_entry.run)


def test_bad_model_is_an_error_before_the_app(tmp_path, capsys):
    """`tui --model DIR` with no model there: one error line, exit 2, no screen."""
    from qwengpu_mlx.cli.main import main

    missing = tmp_path / "no-such-model"
    assert main(["tui", "--model", str(missing)]) == 2
    errors = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and str(missing) in errors[0]


def test_wrap_rows_indents_continuations():
    from rich.console import Console
    from rich.text import Text

    console = Console(width=200)
    text = Text("  12   345  EXEC(0, 0, 15)      B0 w0 mask 1111 (lanes 0,1,2,3)  | mov r1, tid; setp p0, r1, r2")
    rows = wrap_rows(text, console, 40, indent=12)
    assert all(r.cell_len <= 40 for r in rows) and len(rows) >= 3
    assert all(r.plain.startswith(" " * 12) and r.plain[12] != " " for r in rows[1:])
    assert " ".join(r.plain for r in rows).split() == text.plain.split()  # nothing lost, words whole
    assert wrap_rows(text, console, 200) == [text]
    # too narrow for the indent: continuation rows start at the left edge
    assert not wrap_rows(text, console, 20, indent=12)[1].plain.startswith(" ")


# --------------------------------------------------------------------------- the app


def test_input_history_and_completion():
    """up/down walk the lines entered (the draft comes back last); tab takes the suggestion."""

    async def go():
        app = DashboardApp(show_timing=False)
        async with app.run_test(size=SIZE) as pilot:
            prompt = app.main.prompt
            for line in ("/help", "/check off"):
                await type_command(pilot, line)
            await pilot.press(*"dra")
            seen = []
            for key in ("up", "up", "up", "down", "down"):
                await pilot.press(key)
                seen.append(prompt.value)
            assert seen == ["/check off", "/help", "/help", "/check off", "dra"]
            assert prompt.cursor_position == len("dra")

            async def completed(typed: str) -> str:
                prompt.value = ""
                await pilot.press(*[("space" if c == " " else c) for c in typed])
                await pilot.pause()
                await pilot.press("tab")
                return prompt.value

            assert await completed("/ker") == "/kernels"
            assert await completed("/check of") == "/check off"
            assert await completed("/run vec_a") == "/run vec_add"  # examples/kernels/vec_add.cu
            assert await completed("/run examples/kernels/shfl_xor_a") == "/run examples/kernels/shfl_xor_allreduce.cu"
            assert await completed("/he") == "/help"
            assert await completed("/ch") == "/check "
            assert await completed("/run nosuchkernel") == "/run nosuchkernel"  # nothing to take: unchanged

    run_async(go())


def test_palette_lists_and_runs_the_dashboard_commands():
    from qwengpu_mlx.tui.palette import DashboardCommands
    from textual.command import CommandPalette

    async def go():
        app = DashboardApp(show_timing=False, initial="/help")
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            await wait_until(pilot, lambda: screen.transcript.entries[-1][0] == "info", timeout=10, what="--run")
            titles = [hit.text async for hit in DashboardCommands(screen).discover()]
            assert {"Run a kernel…", "Clear the panes", "Help", "Check: turn off"} <= set(titles)
            assert "Rerun the last launch" not in titles  # nothing ran yet
            found = [hit.text async for hit in DashboardCommands(screen).search("run vec_add")]
            assert found[0] == "Run vec_add"
            await pilot.press("ctrl+p")
            await pilot.pause()
            assert isinstance(app.screen, CommandPalette)
            await pilot.press(*"check")
            await wait_until(pilot, lambda: app.screen.query_one("CommandList").option_count > 0, timeout=10,
                             what="the palette's hits")
            await pilot.press("enter")
            await pilot.pause()
            assert app.screen is screen and "check: off" in screen.status_bar.plain()

    run_async(go())




def _registers_from_vals(decoded, program) -> dict:
    """(warp, lane, register) -> the last value a VAL record carried for it."""
    regs, block, warp = {}, None, None
    for i, t in enumerate(decoded):
        if t.kind == "EXEC":
            block, warp = t.get("block"), t.get("warp")
        elif t.kind == "VAL":  # a full record has three chunks, a short one C0 alone
            dst = program.blocks[block].instrs[t.get("slot")].dst
            end = record_end([d.kind for d in decoded], i)
            regs[(warp, t.get("lane"), dst)] = chunk_value(decoded[i + 1:end])
    return regs


def test_dot_launch_streams_tokens_and_machine_state():
    async def go():
        app = DashboardApp(show_timing=False)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            await type_command(pilot, DOT)
            await wait_until(pilot, lambda: launch_finished(screen), what="the dot launch")
            await pilot.pause()
            out = screen.last_outcome
            assert out.status == "done", out.error
            text = screen.launch_pane.plain_text()
            # the prompt summarized, then the launch as the model wrote it, with meanings
            assert "prompt:" in text and "PROG records" in text and "GO" in text
            assert "EXEC(0, 0, 15)" in text and "B0 w0 mask 1111 (lanes 0,1,2,3)" in text
            assert "STOP" in text.splitlines()[-1]
            kinds = screen.decoder.kinds
            assert kinds["EXEC"] >= 2 and kinds["VAL"] >= 3 and kinds["MEM"] >= 1 and kinds["STOP"] == 1
            assert "mem[6] out[0]" in text and "= 32" in text  # a MEM record, joined from its chunks
            # long lines wrap inside the pane (none is cut at its right edge), their text whole
            stream = screen.launch_pane.stream
            width = stream.scrollable_content_region.width
            rows = stream.plain_rows()
            assert max(map(len, rows)) <= width < max(map(len, text.splitlines()))
            assert len(rows) > len(text.splitlines())
            assert " ".join(" ".join(rows).split()) == " ".join(text.split())
            # machine pane: memory from the recurrent state, registers from VAL, the mask from EXEC
            st = screen.machine_pane.state
            assert st.memory_source == "recurrent state"
            assert st.memory[6] == 32 and st.memory[:6] == [1, 2, 3, 4, 5, 6]
            mem_lines = [ln.split() for ln in screen.machine_pane.memory_text().splitlines()]
            assert ["6", "out[0]", "32"] in mem_lines
            written = {t.get("addr") for t in out.launch.decoded if t.kind == "MEM"}
            assert mem_lines[1][:2] == ["6", "out[0]"] and written == {6}  # the word written: first, above the fold
            # the registers agree with the VAL records of the launch, decoded here on their own
            expect = _registers_from_vals(out.launch.decoded, out.program)
            assert expect and st.regs == expect
            # lane 3 has no element (i < n fails): its guarded load keeps the register's old value, 0
            assert [v for (_, lane, _), v in st.regs.items() if lane == 3] == [0]
            last_exec = [t for t in out.launch.decoded if t.kind == "EXEC"][-1]
            assert st.mask == last_exec.get("mask")
            regs_text = screen.machine_pane.registers_text()
            assert "w0 mask" in regs_text and f"w0 r{st.registers_used()[0]}" in regs_text
            # no WST record says the warp finished (it ends with its thread block); after STOP it is done
            from qwengpu_mlx.core.records import describe_wst

            dec = out.launch.decoded
            wst = [describe_wst(chunk_value(dec[i + 1:i + 4])) for i, t in enumerate(dec) if t.kind == "WST"]
            assert wst and not wst[-1].startswith("done") and dec[-1].kind == "STOP"
            assert ["w0", "status", "done"] in [ln.split() for ln in regs_text.splitlines()]
            status = screen.status_bar.plain()
            # the launch ran on the embedded circuit at the default machine, named by its own name
            default = next(k for k, v in MACHINES.items() if v == DEFAULT_MACHINE and k != "default")
            assert f"model: embedded circuit ({default} machine)" in status and "check: exact" in status
            assert f"tokens: {out.tokens}" in status and "tok/s" not in status
            assert any("out = [32]" in t for _, t in screen.transcript.entries)
        assert not mlx_threads()

    run_async(go())


def test_commands_kernels_help_check_and_chat():
    async def go():
        app = DashboardApp(show_timing=False, initial="/help")
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            tr = screen.transcript
            await wait_until(pilot, lambda: any(t == "/help" for _, t in tr.entries), timeout=10, what="--run")
            await type_command(pilot, "/kernels")
            await pilot.pause()
            picker = app.screen
            assert isinstance(picker, KernelPicker)
            ids = [o.id for o in picker.option_list.options]
            assert ids == sorted(p.stem for p in (ROOT / "examples" / "kernels").glob("*.cu"))
            dot = picker.option_list.get_option("dot")
            assert "Dot product" in str(dot.prompt)
            await pilot.press(*"vec_a")  # the filter
            await pilot.pause()
            assert [o.id for o in picker.option_list.options] == ["vec_add"]
            await pilot.press("escape")  # closes, runs nothing
            await pilot.pause()
            assert app.screen is screen and screen.last_request is None
            assert "/run KERNEL.cu" in tr.plain_text() and "ctrl+r" in tr.plain_text()  # the initial /help
            await type_command(pilot, "/check off")
            assert "check: off" in screen.status_bar.plain()
            await type_command(pilot, "/check on")
            assert "check: on" in screen.status_bar.plain()
            await type_command(pilot, "/nonsense")
            assert tr.entries[-1][0] == "error"
            # a launch the host refuses: the error is reported, nothing runs on the model
            await type_command(pilot, "/run examples/kernels/dot.cu a=1,2,3")
            await wait_until(pilot, lambda: launch_finished(screen), timeout=60, what="the refused launch")
            assert screen.last_outcome.status == "error" and "missing" in screen.last_outcome.error
            assert tr.entries[-1][0] == "error" and "error" in screen.status_bar.plain()
            await type_command(pilot, "what is a warp?")
            await wait_until(pilot, lambda: NEEDS_CHECKPOINT in tr.plain_text(), timeout=30, what="the chat reply")
            assert ("user", "what is a warp?") in tr.entries
            # the footer lists the key bindings
            keys = {b.key for _, b, _, _ in screen.active_bindings.values()}
            assert {"ctrl+r", "escape", "ctrl+c", "ctrl+l", "ctrl+q"} <= keys
            await pilot.press("ctrl+l")
            assert tr.entries == []

    run_async(go())


def test_cancel_then_rerun():
    """escape stops a running launch at its next token; ctrl+r reruns it on a fresh MLX thread.

    The kernel is a float sum (1,461 tokens): on the native step the dot product's 24 tokens,
    and at times a 602-token reduction, end before a key press lands."""

    async def go():
        app = DashboardApp(show_timing=False)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            await type_command(pilot, "/kernels")  # the picker, then enter on its "dot" option: /run dot
            await pilot.pause()
            picker = app.screen
            assert isinstance(picker, KernelPicker)
            picker.query_one(OptionList).focus()
            picker.option_list.highlighted = picker.option_list.get_option_index("float_sum")
            await pilot.press("enter")
            await wait_until(pilot, lambda: screen.decoder is not None and screen.decoder.kinds.get("EXEC"),
                             what="the first EXEC")
            assert app.screen is screen and screen.last_request.source.name == "float_sum.cu"
            assert ("user", "/run float_sum") in screen.transcript.entries
            await pilot.press("escape")
            await wait_until(pilot, lambda: launch_finished(screen), timeout=30, what="the cancel")
            assert screen.last_outcome.cancelled
            assert "cancelled" in screen.status_bar.plain()
            assert "STOP" not in screen.launch_pane.plain_text()
            # at most the dashboard's one MLX thread, for the rerun too (a /run is driven from a thread
            # worker, its launch in the launch process; chat turns run on the MLX thread)
            assert mlx_threads() in ([], ["qwengpu-mlx"])
            screen.last_outcome = None
            await pilot.press("ctrl+r")
            await wait_until(pilot, lambda: launch_finished(screen), what="the rerun")
            assert screen.last_outcome.status == "done", screen.last_outcome.error
            spec = json.loads((KERNELS / "float_sum.json").read_text())  # its launch file's input
            expected = ORACLES["float_sum"](spec)["out"]  # the float32 sum in index order, from fractions
            assert [w % 2**32 for w in screen.last_outcome.outputs["out"]] == [w % 2**32 for w in expected]
            assert "check: exact" in screen.status_bar.plain()

    run_async(go())


def test_quit_during_a_launch_exits_cleanly():
    """ctrl+q while the model is writing: the launch stops, its thread clears its MLX streams, exit 0."""
    script = textwrap.dedent(f"""
        import asyncio, threading, time
        from qwengpu_mlx.tui.app import DashboardApp

        async def main():
            app = DashboardApp(show_timing=False)
            async with app.run_test() as pilot:
                screen = app.main
                screen.submit("/run reduce_shared_tree")  # 602 tokens: the dot product's 24 end before a key lands
                t0 = time.monotonic()
                while not (screen.decoder is not None and screen.decoder.count >= 2):
                    assert time.monotonic() - t0 < {LAUNCH_TIMEOUT}
                    await pilot.pause(0.1)
                await pilot.press("ctrl+q")
            print("left:", [t.name for t in threading.enumerate() if t.name.startswith("qwengpu-mlx")])
            print("cancelled:", screen.last_outcome is not None and screen.last_outcome.cancelled)

        asyncio.run(main())
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=LAUNCH_TIMEOUT + 60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "terminate called" not in proc.stderr
    assert "left: []" in proc.stdout
    assert "cancelled: True" in proc.stdout


def test_snapshot_after_dot_launch(snap_compare):
    async def run_before(pilot):
        await pilot.pause()
        screen = pilot.app.main
        await wait_until(pilot, lambda: bool(screen.query("#prompt")), timeout=30, what="the main screen")
        screen.query_one("#prompt", Input).cursor_blink = False  # a steady cursor: deterministic SVG
        await type_command(pilot, DOT)
        await wait_until(pilot, lambda: launch_finished(screen), what="the dot launch")
        assert screen.last_outcome.status == "done", screen.last_outcome.error
        await pilot.pause()

    assert snap_compare(DashboardApp(show_timing=False), terminal_size=SIZE, run_before=run_before)


def test_run_takes_the_machine_its_launch_file_names():
    """/run of a 32-thread example runs on the large machine its launch file asks for; --machine picks one."""
    from qwengpu_mlx.tui import commands

    req = commands.parse("/run block32_reduce").run
    assert req.machine == "large" and req.block == 32
    assert commands.parse("/run dot").run.machine == "default"
    typed = commands.parse("/run dot --machine large").run  # as run --machine: over the launch file's
    assert typed.machine == "large" and typed.args["n"] == 3 and "--machine large" in typed.describe()
    with pytest.raises(CommandError, match="one of default"):
        commands.parse("/run dot --machine huge")
