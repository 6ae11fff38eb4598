"""The dashboard's /run launches run in a process of their own (``tui.launch_process``), at the CLI's pace.

Expected values: the kernels' outputs from what they compute (a dot product, an int32
sum), written here in Python; the launch's tokens from the CLI's own launch of the same
kernel in this process (the same runner: the dashboard must show exactly what it wrote).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

pytest.importorskip("textual")

from qwengpu_mlx.runtime import CircuitStore, LaunchCancelled, LaunchEvents, LaunchRequest, launch  # noqa: E402
from qwengpu_mlx.tui.app import DashboardApp  # noqa: E402
from qwengpu_mlx.tui.chat import NoChat  # noqa: E402
from qwengpu_mlx.tui.commands import parse  # noqa: E402
from qwengpu_mlx.tui.feed import Feed, JobDone, LaunchToken, Phase  # noqa: E402
from qwengpu_mlx.tui.launch_process import LaunchProcess  # noqa: E402
from tests.support.dashboard import SIZE, enter_line, wait_until  # noqa: E402

LONG = "float_sum"  # 1,461 tokens on the default machine: long enough to cancel in the middle


class Recorder(LaunchEvents):
    """The events a launch process hands back, in order; cancels once ``cancel_after`` tokens came."""

    def __init__(self, cancel: threading.Event | None = None, cancel_after: int | None = None):
        self.cancel, self.cancel_after = cancel, cancel_after
        self.tokens: list[int] = []
        self.phases: list[str] = []
        self.began = None
        self.cancelled_at = None

    def phase(self, text: str) -> None:
        self.phases.append(text)

    def note(self, text: str) -> None:
        self.phases.append(text)

    def begin(self, program, prompt) -> None:
        self.began = (program, prompt)

    def token(self, token_id: int, tok) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise LaunchCancelled()
        assert tok.kind  # rebuilt from the machine's vocabulary on this side
        self.tokens.append(token_id)
        if self.cancel_after is not None and len(self.tokens) == self.cancel_after:
            self.cancelled_at = time.monotonic()
            self.cancel.set()


def cli_tokens(name: str) -> list[int]:
    req = parse(f"/run {name}").run
    request = LaunchRequest(req.source, req.args, kernel=req.kernel, block=req.block, grid=req.grid)
    return launch(request, store=CircuitStore()).tokens


def test_the_launch_process_streams_the_cli_tokens_and_stops_when_cancelled():
    """Its events are the CLI's launch, token for token; a cancel set mid-launch stops it within
    a token or two (well under a second even on a loaded machine), and the next launch shows
    only its own tokens (the cancelled one's rest was drained); a job sent ahead of its run() runs
    once, and the next job after it shows only its own tokens."""
    proc = LaunchProcess()
    try:
        dot = Recorder()
        out = proc.run(parse("/run dot").run, dot, threading.Event(), 1, check=True)
        assert out.status == "done" and out.problems == [], out.error
        assert proc.pid is not None and proc.pid != os.getpid()
        assert dot.tokens == cli_tokens("dot") == out.launch.tokens
        assert dot.began is not None and dot.began[1] == out.launch.prompt
        assert out.outputs["out"] == [1 * 4 + 2 * 5 + 3 * 6]  # dot's launch file: [1,2,3] . [4,5,6]

        cancel = threading.Event()
        cut = Recorder(cancel, cancel_after=3)
        out = proc.run(parse(f"/run {LONG}").run, cut, cancel, 2, check=True)
        stopped = time.monotonic() - cut.cancelled_at
        assert out.cancelled and len(cut.tokens) == 3
        assert stopped < 1.0, f"the launch went on {stopped:.2f} s after the cancel"

        again = Recorder()
        out = proc.run(parse("/run dot").run, again, threading.Event(), 3, check=True)
        assert out.status == "done" and again.tokens == dot.tokens

        ahead = Recorder()  # sent from the key press's handler, read by the job's run(): sent once
        proc.send_ahead(parse("/run dot").run, 4, check=True)
        out = proc.run(parse("/run dot").run, ahead, threading.Event(), 4, check=True)
        assert out.status == "done" and ahead.tokens == dot.tokens
        after = Recorder()
        out = proc.run(parse("/run dot").run, after, threading.Event(), 5, check=True)
        assert out.status == "done" and after.tokens == dot.tokens
    finally:
        proc.close()
    assert proc.pid is None


def test_a_job_end_wakes_the_screen_at_once():
    """Tokens wake the screen once per batch; a job's end wakes it every time (shown at once)."""
    wakes = []
    feed = Feed(lambda: wakes.append("batch"), lambda: wakes.append("now"))
    feed.put(1)
    feed.put(2)
    feed.put(JobDone(1), now=True)
    assert wakes == ["batch", "now"] and feed.take() == [1, 2, JobDone(1)]


def test_the_feed_tells_a_batch_of_launch_tokens_alone_apart():
    """The screen lets a batch of nothing but launch tokens grow (``feed.TOKENS_PER_BATCH``): the
    feed counts them, and any other event queued makes the batch one to show at the next interval."""
    feed = Feed(lambda: None)
    feed.put(LaunchToken(1, 5, None))
    feed.put(LaunchToken(1, 6, None))
    assert (feed.launch_tokens, len(feed), feed.tokens_only()) == (2, 2, True)
    feed.put(Phase(1, "checking"))
    assert (feed.launch_tokens, len(feed), feed.tokens_only()) == (2, 3, False)
    assert len(feed.take()) == 3
    assert (feed.launch_tokens, len(feed), feed.tokens_only()) == (0, 0, True)


def test_dashboard_run_goes_through_the_launch_process_and_shows_its_launch():
    """/run in the dashboard: the launch ran in the launch process, every token is in the launch
    pane, the check's verdict and the outputs are on the screen; escape cancels a long one and
    the dashboard's process keeps no launch of its own."""

    async def go():
        app = DashboardApp(chat=NoChat(), show_timing=False)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.main
            await enter_line(pilot, "/run dot")
            await wait_until(pilot, lambda: screen.last_outcome is not None and not screen.running, what="dot")
            out = screen.last_outcome
            assert out.status == "done", out.error
            assert screen.launches.pid not in (None, os.getpid())
            assert screen.decoder.count == out.tokens == len(cli_tokens("dot"))
            assert "check: exact" in screen.status_bar.plain()
            assert any(kind == "result" and text.endswith("out = [32]") for kind, text in screen.transcript.entries)

            await enter_line(pilot, f"/run {LONG}")
            await wait_until(pilot, lambda: screen.decoder is not None and screen.decoder.count >= 2,
                             what="the long launch's first tokens")
            await pilot.press("escape")
            assert not screen.running and "cancelled" in screen.status_bar.plain()
            await enter_line(pilot, "/run dot")
            await wait_until(pilot, lambda: screen.last_outcome.request.source.stem == "dot" and not screen.running,
                             what="dot after the cancel")
            assert screen.last_outcome.status == "done" and screen.decoder.count == len(cli_tokens("dot"))
            assert "STOP" in screen.launch_pane.plain_text()

    asyncio.run(go())
