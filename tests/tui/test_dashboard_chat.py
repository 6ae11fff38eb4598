"""The dashboard chats: plain text goes to the chat loop, its launches stream to the panes.

The chat model is the scripted stand-in of ``test_chat_session`` (it writes a given tool
call and answer) with the demo model's tokenizer; the launch is real, on the embedded
circuit, checked against the reference interpreter.
"""

from __future__ import annotations

import asyncio
import re

import pytest

pytest.importorskip("textual")

from tests.support.chat_script import ScriptedModel  # noqa: E402
from tests.support.dashboard import SIZE, screen_lines, type_command, wait_until  # noqa: E402

from qwengpu_mlx.chat.models import ChatModel  # noqa: E402
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE  # noqa: E402
from qwengpu_mlx.runtime import CircuitStore  # noqa: E402
from qwengpu_mlx.tui.app import DashboardApp  # noqa: E402
from qwengpu_mlx.tui.chat import SessionChat  # noqa: E402


def scripted_chat(script: list[str]) -> SessionChat:
    from mlx_lm.tokenizer_utils import load

    from qwengpu_mlx.chat.demo import DEMO_DIR
    from qwengpu_mlx.splice.combined_runner import CombinedModel

    tok = load(DEMO_DIR)
    runner = CircuitStore().runner(PUBLISHED_MACHINE)
    base = ScriptedModel(tok, script, len(tok.vocab))
    return SessionChat(ChatModel("scripted", CombinedModel(base, None, None, runner), tok, PUBLISHED_MACHINE))


def test_plain_text_chats_and_the_launch_streams_to_the_panes():
    a, b = [2, 5], [7, -3]
    expected = a[0] * b[0] + a[1] * b[1]
    call = ("<tool_call>\n<function=gpu_eval>\n<parameter=expression>\n"
            f"{a} @ {b}\n</parameter>\n</function>\n</tool_call>")
    chat = scripted_chat([call, f"The GPU in my layers computed {expected}."])

    async def go():
        app = DashboardApp(show_timing=False, chat=chat)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            tr = screen.transcript
            assert "chat: scripted" in screen.status_bar.plain()
            await type_command(pilot, f"what is {a} @ {b}?")
            await wait_until(pilot, lambda: any(k == "assistant" for k, _ in tr.entries), timeout=120,
                             what="the chat's answer")
            await wait_until(pilot, lambda: not screen.chatting, timeout=30, what="the chat turn to end")
            text = tr.plain_text()
            assert "tool call: gpu_eval(expression=" in text
            assert "launch dot:" in text and "check: exact" in text
            assert f"tool response: {expected}" in text
            assert ("assistant", f"The GPU in my layers computed {expected}.") in tr.entries
            # the launch pane showed the launch as the model wrote it; the machine pane its memory
            assert screen.launch_pane.border_title.startswith("launch (chat): dot")
            assert screen.decoder is not None and screen.decoder.count > 0
            assert expected & 0xFFFFFFFF in screen.decoder.state.memory  # words as unsigned 32-bit
            assert "check: exact" in screen.status_bar.plain()  # the chat's launch verdict, not a stale "on"
            # the launch ran on the chat model's weights, and the status bar says so
            assert "model: scripted (chat model; its launches on the circuit spliced into it)" in \
                screen.status_bar.plain()
            # /run keeps working beside the chat
            await type_command(pilot, "/check off")
            assert "check: off" in screen.status_bar.plain()

    asyncio.run(go())


def test_a_tool_error_shows_with_one_error_prefix():
    call = ("<tool_call>\n<function=gpu_eval>\n<parameter=expression>\n"
            "[1, 2] @ [3]\n</parameter>\n</function>\n</tool_call>")
    chat = scripted_chat([call, "The vectors differ in length."])

    async def go():
        app = DashboardApp(show_timing=False, chat=chat)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            tr = screen.transcript
            await type_command(pilot, "what is [1, 2] @ [3]?")
            await wait_until(pilot, lambda: not screen.chatting and any(k == "assistant" for k, _ in tr.entries),
                             timeout=60, what="the chat's answer")
            errors = [t for k, t in tr.entries if k == "error"]
            assert errors == ["tool response: the vectors have 2 and 1 elements ('@' at column 8)"], tr.entries
            shown = " ".join(screen_lines(tr))  # the transcript wraps long lines
            assert "error: tool response: the vectors have 2 and 1 elements ('@' at column 8)" in shown, shown
            assert shown.count("error:") == 1, shown

    asyncio.run(go())


def test_reasoning_has_its_own_style_and_is_not_the_answer():
    from qwengpu_mlx.tui.widgets.transcript import STYLES

    chat = scripted_chat(["<think>\nA greeting needs no GPU.\n</think>\n\nHello."])

    async def go():
        app = DashboardApp(show_timing=False, chat=chat)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            tr = screen.transcript
            await type_command(pilot, "hi")
            await wait_until(pilot, lambda: any(k == "assistant" for k, _ in tr.entries), timeout=60,
                             what="the chat's answer")
            kinds = [(k, t) for k, t in tr.entries if k in ("reasoning", "assistant")]
            assert kinds == [("reasoning", "A greeting needs no GPU."), ("assistant", "Hello.")]
            assert STYLES["reasoning"] not in (STYLES["assistant"], STYLES["info"])

    asyncio.run(go())


def test_the_status_bar_counts_a_calls_launches_with_their_pace():
    """A call of three launches: the status bar says which launch of three runs, with its
    tokens/s, while it runs (watched as the screen shows it; the sum of each list by the GPU,
    then their sum: 1 + 2 + 3 + 4 = 10)."""
    call = ("<tool_call>\n<function=gpu_eval>\n<parameter=expression>\n"
            "sum([1, 2]) + sum([3, 4])\n</parameter>\n</function>\n</tool_call>")
    chat = scripted_chat([call, "The GPU in my layers computed 10."])

    async def go():
        app = DashboardApp(show_timing=True, chat=chat)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            seen: list[str] = []
            bar, set_fields = screen.status_bar, screen.status_bar.set

            def recording(**changes):  # every row the bar is given: a 20-token launch outlives no poll
                set_fields(**changes)
                seen.append(bar.plain())

            bar.set = recording
            await type_command(pilot, "what is sum([1, 2]) + sum([3, 4])?")
            await wait_until(pilot, lambda: ("result", "tool response: 10") in screen.transcript.entries,
                             what="the call's result")
            await wait_until(pilot, lambda: not screen.chatting, what="the turn's end")
            launching = [s for s in seen if re.search(r"│ +launch [123] of 3", s)]
            assert launching, seen
            assert any(re.search(r"│ +\d+\.\d tok/s +│", s) for s in launching), launching
            assert ("result", "tool response: 10") in screen.transcript.entries, screen.transcript.entries

    asyncio.run(go())


@pytest.mark.parametrize("reply, before", [
    ("I could not compute that: pow(1, 2)\n</parameter>\n</function>\n</tool_call>", None),
    ("Let me see.\n<tool_call>\n<function=gpu_eval>\n<parameter=expression>\n1 + ", "Let me see."),
], ids=["ended, never started", "started, never closed"])
def test_a_call_that_does_not_parse_is_shown_as_such_never_as_the_answer(reply, before):
    """Nothing runs; the error line says what the call was; only text before a call's start
    marker is the message's own."""
    chat = scripted_chat([reply])

    async def go():
        app = DashboardApp(show_timing=False, chat=chat)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            tr = screen.transcript
            await type_command(pilot, "what is 1 + 2?")
            await wait_until(pilot, lambda: any(k == "error" for k, _ in tr.entries), what="the call's error line")
            await wait_until(pilot, lambda: not screen.chatting, timeout=30, what="the chat turn to end")
            answers = [t for k, t in tr.entries if k == "assistant"]
            assert answers == ([before] if before else []), tr.entries
            [error] = [t for k, t in tr.entries if k == "error"]
            assert error.startswith("a tool call ") and "not run" in error and "tool_call>" in error, error
            assert not any(t.startswith("launch ") for k, t in tr.entries), tr.entries

    asyncio.run(go())
