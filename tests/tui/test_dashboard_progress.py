"""Live progress: a slow chat model's reply shows as it is written, the status bar follows
its stages, and escape stops it at once.

The chat model is a stand-in that writes a few tokens a second (each token's event comes
after a sleep, as from a slow model), through the backend seam the dashboard uses
(``tui.chat.ChatBackend``, reporting its prefill and each token as ``SessionChat`` does).
What is asserted is what the screen shows (Textual's pilot, the compositor's text).
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

pytest.importorskip("textual")

from tests.support.dashboard import SIZE, enter_line, wait_until  # noqa: E402

from qwengpu_mlx.chat.session import ReasoningPiece, TextPiece, TurnSummary  # noqa: E402
from qwengpu_mlx.runtime.speed import GenStats  # noqa: E402
from qwengpu_mlx.tui.app import DashboardApp  # noqa: E402

REASONING = ["The ", "user ", "greets ", "me; ", "no ", "GPU ", "is ", "needed ", "here."]
ANSWER = ["Hello ", "there, ", "nice ", "to ", "meet ", "you."]
PROMPT_TOKENS = 42
TOKEN_S = 0.25  # the stand-in's time per token: 4 tokens a second


class SlowChat:
    """Writes REASONING then ANSWER, one piece per token, TOKEN_S apart; records when each
    reply's generation stopped (on the MLX thread)."""

    name = "slow"
    available = True

    def __init__(self):
        self.stopped_at: list[float] = []
        self.finished = 0

    def reply(self, text, launches=None):
        try:
            launches.prefill(PROMPT_TOKENS)
            time.sleep(4 * TOKEN_S)  # the prompt's prefill: a second on screen
            for pieces, kind in ((REASONING, ReasoningPiece), (ANSWER, TextPiece)):
                for piece in pieces:
                    launches.generated()  # raises LaunchCancelled once the user cancelled
                    time.sleep(TOKEN_S)
                    yield kind(piece)
            yield TurnSummary(GenStats(), 0.0, answer="".join(ANSWER))
            self.finished += 1
        finally:
            self.stopped_at.append(time.monotonic())

    def reset(self):
        pass


def screen_text(app) -> str:
    """What the terminal shows now, as plain text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def test_a_slow_reply_streams_its_stages_show_and_escape_stops_it():
    chat = SlowChat()

    async def go():
        app = DashboardApp(show_timing=True, chat=chat)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            tr = screen.transcript
            phases: list[str] = []
            partial: list[str] = []

            def watch() -> bool:
                status = screen.status_bar.plain().rsplit("│", 1)[-1].strip()
                if not phases or phases[-1] != status:
                    phases.append(status)
                shown = screen_text(app)
                if "qwen › Hello there," in shown and not any(k == "assistant" for k, _ in tr.entries):
                    partial.append(shown)
                return not screen.chatting

            # watched from the moment the line is entered, so a short prefill is not missed
            # while waiting for the reply to start (a loaded machine delays the pilot)
            await enter_line(pilot, "hi")
            t0 = time.monotonic()
            started = False
            while True:
                ended = watch()
                started = started or screen.chatting
                if started and ended:
                    break
                assert time.monotonic() - t0 < 60, phases
                await pilot.pause(0.05)
            # the reply showed while it was written: its answer on screen before it ended
            assert partial, phases
            assert "thinking › The user greets me; no GPU is needed here." in partial[0]
            assert ("assistant", "Hello there, nice to meet you.") in tr.entries
            assert ("reasoning", "The user greets me; no GPU is needed here.") in tr.entries
            # the status bar went through the stages, with counts
            stages = [p.split(":")[0] for p in phases]
            assert f"prefill: {PROMPT_TOKENS} prompt tokens" in phases, phases
            assert stages.index("prefill") < stages.index("reasoning") < stages.index("answering"), phases
            assert any(p.startswith("answering: ") and "tok/s" in p for p in phases), phases
            assert phases[-1] == "done", phases

            # escape in the middle of the next reply: the screen says so at once, the model stops
            await enter_line(pilot, "hi again")
            await wait_until(pilot, lambda: "thinking › The user greets" in screen.live_reply.plain(), timeout=30,
                             what="the second reply's reasoning")
            assert "thinking › The user greets" in screen_text(app).split("thinking › The user greets", 1)[1]
            pressed = time.monotonic()
            await pilot.press("escape")
            await wait_until(pilot, lambda: not screen.chatting and "cancelled" in screen.status_bar.plain(),
                             timeout=10, what="the cancel on screen")
            shown_after = time.monotonic() - pressed
            await wait_until(pilot, lambda: len(chat.stopped_at) == 2, timeout=10, what="the reply to stop")
            stopped_after = chat.stopped_at[-1] - pressed
            print(f"escape: on screen after {shown_after:.2f} s, generation stopped after {stopped_after:.2f} s")
            assert shown_after < 2.0 and stopped_after < 2.0, (shown_after, stopped_after)
            assert chat.finished == 1
            assert any(k == "info" and t.startswith("chat cancelled") for k, t in tr.entries)
            assert any(k == "reasoning" and t.startswith("The user") for k, t in tr.entries[-3:]), tr.entries[-4:]

            # and the chat goes on
            n = len(tr.entries)
            await enter_line(pilot, "hi once more")
            await wait_until(pilot, lambda: any(k == "assistant" for k, _ in tr.entries[n:]), timeout=60,
                             what="the third reply")
            assert chat.finished == 2

    asyncio.run(go())


def test_the_tui_command_takes_the_chats_flags():
    """`tui` passes --max-tokens, --thinking, --temp, ... to the same ChatSettings `chat` builds."""
    from qwengpu_mlx.chat.cli import settings_from
    from qwengpu_mlx.cli.parser import build_parser

    p = build_parser()
    flags = ["--max-tokens", "4096", "--thinking", "--temp", "0.7", "--top-p", "0.9", "--seed", "3",
             "--system-prompt", "be brief", "--mode", "advanced"]
    tui, chat = p.parse_args(["tui", *flags]), p.parse_args(["chat", *flags, "--check"])
    assert settings_from(tui) == settings_from(chat)
    s = settings_from(tui)
    assert (s.max_tokens, s.thinking, s.temp, s.top_p, s.seed, s.system_prompt, s.mode, s.check) == (
        4096, True, 0.7, 0.9, 3, "be brief", "advanced", True)
    assert settings_from(p.parse_args(["tui", "--no-thinking", "--no-check"])).thinking is False


def test_the_feed_keeps_order_and_wakes_once_per_delivery():
    from qwengpu_mlx.tui.feed import Feed

    wakes = []
    feed = Feed(lambda: wakes.append(threading.current_thread().name))
    for i in range(5):
        feed.put(i)
    assert feed.take() == [0, 1, 2, 3, 4] and len(wakes) == 1
    feed.put(5)
    assert feed.take() == [5] and len(wakes) == 2
