"""The dashboard chats as long as you like: turn after turn on the demo model, each with a
GPU launch, a /run between them, a reply cancelled with escape, and the turns after it.

The model is the real demo model (``--model demo``) through the real chat loop; only the
cancel is timed by the test: the reply to be cancelled is held at its launch's first
token until escape has been pressed (the demo answers in about a second, quicker than a
key press can be aimed), then the dashboard's own cancel stops it.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading

import pytest

pytest.importorskip("textual")

from tests.support.dashboard import SIZE, enter_line, screen_lines, type_command, wait_until  # noqa: E402

from qwengpu_mlx.chat.cli import open_model  # noqa: E402
from qwengpu_mlx.chat.session import ChatSettings  # noqa: E402
from qwengpu_mlx.core.machine import PUBLISHED_MACHINE  # noqa: E402
from qwengpu_mlx.tui.app import DashboardApp  # noqa: E402
from qwengpu_mlx.tui.chat import SessionChat  # noqa: E402

DOT = "What is the dot product of [1, 2, 3] and [4, 5, 6]?"
GCD2 = "What is the greatest common divisor of 12 and 18?"  # after a dot product: the toy copies vectors across turns
GCD = "What is the greatest common divisor of 84 and 36?"
SUM = "What is the sum of [1, 2, 3]?"
RUN_DOT = "/run examples/kernels/dot.cu a=1,2,3 b=4,5,6 out=0 n=3"


class _HeldLaunch:
    """A launch sink that stops the MLX thread at the first launch token until ``release``."""

    def __init__(self, inner, reached: threading.Event, release: threading.Event):
        self.inner, self.reached, self.release = inner, reached, release

    def token(self, token_id, tok):
        if not self.reached.is_set():
            self.reached.set()
            self.release.wait(30)
        self.inner.token(token_id, tok)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class HoldableChat(SessionChat):
    """The demo's chat; ``hold_next()`` holds the next reply at its first launch token."""

    def __init__(self, model):
        super().__init__(model, ChatSettings(check=True))
        self._hold: tuple[threading.Event, threading.Event] | None = None
        self.threads: set[str] = set()  # where the replies ran

    def hold_next(self) -> tuple[threading.Event, threading.Event]:
        self._hold = (threading.Event(), threading.Event())
        return self._hold

    def reply(self, text, launches=None):
        self.threads.add(threading.current_thread().name)
        if self._hold is not None and launches is not None:
            launches, self._hold = _HeldLaunch(launches, *self._hold), None
        return super().reply(text, launches)


@pytest.fixture(scope="module")
def demo():
    return open_model("demo", PUBLISHED_MACHINE, log=lambda s: None)


def test_chat_goes_on_across_turns_runs_and_a_cancel(demo):
    chat = HoldableChat(demo)

    async def go():
        app = DashboardApp(show_timing=False, chat=chat)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            tr = screen.transcript

            async def ask(question: str, typed: bool = False) -> list[tuple[str, str]]:
                n = len(tr.entries)
                await (type_command if typed else enter_line)(pilot, question)
                await wait_until(pilot, lambda: screen.chatting or len(tr.entries) > n + 1, timeout=10,
                                 what="the chat turn to start")
                await wait_until(pilot, lambda: not screen.chatting, timeout=60, what=f"the answer to {question!r}")
                return tr.entries[n:]

            async def run(command: str) -> list[tuple[str, str]]:
                n = len(tr.entries)
                before = screen.last_outcome
                await enter_line(pilot, command)
                await wait_until(pilot, lambda: screen.last_outcome is not before and not screen.running,
                                 timeout=60, what=command)
                return tr.entries[n:]

            def answered(turn, expression: str, kernel: str, value: int) -> None:
                assert ("dim", f"tool call: gpu_eval(expression={expression!r})") in turn, turn
                assert any(k == "result" and t.startswith(f"launch {kernel}: ") and t.endswith("check: exact")
                           for k, t in turn), turn
                assert ("result", f"tool response: {value}") in turn, turn
                answers = [t for k, t in turn if k == "assistant"]
                assert answers and re.findall(r"-?\d+", answers[-1]) == [str(value)], turn  # the GPU's number, only
                assert not [t for k, t in turn if k == "error"], turn

            def answered_with_its_result(turn) -> str:
                """A call the demo chose, its launch exact, the answer stating the tool's result as given."""
                assert any(k == "dim" and t.startswith("tool call: gpu_eval(") for k, t in turn), turn
                assert any(k == "result" and t.startswith("launch ") and t.endswith("check: exact")
                           for k, t in turn), turn
                [result] = [t.removeprefix("tool response: ") for k, t in turn
                            if k == "result" and t.startswith("tool response: ")]
                answers = [t for k, t in turn if k == "assistant"]
                assert answers and result in answers[-1], turn
                assert not [t for k, t in turn if k == "error"], turn
                return result

            def ran_dot(turn) -> None:
                assert ("result", "a = [1, 2, 3]  b = [4, 5, 6]  out = [32]") in turn, turn
                assert any(k == "result" and t.startswith("dot: ") and t.endswith("check: exact")
                           for k, t in turn), turn
                assert not [t for k, t in turn if k == "error"], turn

            answered(await ask(DOT, typed=True), "[1, 2, 3] @ [4, 5, 6]", "dot", 32)
            ran_dot(await run(RUN_DOT))
            answered(await ask(GCD2), "gcd(12, 18)", "gcd", math.gcd(12, 18))
            assert screen.launch_pane.border_title == "launch (chat): gcd"

            # escape during a reply: held at its launch's first token until the key is pressed
            reached, release = chat.hold_next()
            n = len(tr.entries)
            await enter_line(pilot, GCD)
            await wait_until(pilot, lambda: reached.is_set() or len(tr.entries) > n + 1 and not screen.chatting,
                             timeout=30, what="the reply's launch to start")
            assert reached.is_set() and screen.chatting, tr.entries[n:]
            await pilot.press("escape")
            release.set()
            await wait_until(pilot, lambda: not screen.chatting, timeout=30, what="the cancel")
            cancelled = tr.entries[n:]
            assert any(k == "info" and t.startswith("chat cancelled") for k, t in cancelled), cancelled
            assert not [t for k, t in cancelled if k in ("error", "assistant")], cancelled
            assert screen.launch_pane.border_title.startswith("launch (chat): ")  # whichever kernel the call chose
            assert "cancelled after" in screen.launch_pane.plain_text()
            assert "cancelled" in screen.status_bar.plain()

            ran_dot(await run(RUN_DOT))
            # the toy demo's choice of call for a third question varies with its training
            # (tests/chat/test_demo_answers.py scores its answers); the dashboard shows what it ran
            answered_with_its_result(await ask(SUM))
            assert screen.launch_pane.border_title.startswith("launch (chat): ")

            shown = "\n".join(screen_lines(tr))
            assert "error:" not in shown, shown
            replies = [line for line in shown.splitlines() if line.startswith("qwen › ")]
            assert len(replies) == 3, shown  # one per answered question, none for the cancelled one
            assert "32" in replies[0] and str(math.gcd(12, 18)) in replies[1], shown
            assert shown.count("chat cancelled") == 1, shown
            assert "exact" in screen.status_bar.plain()
        # every reply ran on the dashboard's one MLX thread, which ended with the dashboard
        assert chat.threads == {"qwengpu-mlx"}
        assert not [t for t in threading.enumerate() if t.name.startswith("qwengpu-mlx")]

    asyncio.run(go())
