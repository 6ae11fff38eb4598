"""How work on the MLX thread reports to the screen: typed events, delivered in batches.

Why batches: a launch writes 150-300 tokens a second. One UI update per token (a blocking
``call_from_thread``, then a layout and a render) held the MLX thread on the UI thread and on
the GIL: the dashboard's launches ran at a fifth of the command line's pace. Now the MLX
thread only appends an event to a :class:`Feed` and never waits; the first event after a
delivery wakes the screen with one :class:`FeedReady` message (``post_message`` is
thread-safe), and the screen takes every event queued by then, at most
:data:`DELIVERIES_PER_S` times a second. Order is kept: a launch's end follows its tokens.

Every event names its ``job`` (one /run or one chat turn): the screen drops the events of a
job it has already finished, e.g. one the user cancelled (the screen says so at once; the
MLX thread stops at its next token).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

from textual.message import Message

from qwengpu_mlx.runtime import LaunchCancelled, LaunchEvents

DELIVERIES_PER_S = 5  # the screen redraws what the job did at most this often. A frame costs CPU the launch
# needs (Textual redraws the bounding box of what changed: tens of ms a frame): with the launch in its own
# process, on a loaded 2-core machine (bench.dashboard_launch, collatz_steps) the dashboard took 1.94x the
# CLI's time at 10 frames a second and 1.27x at 5, the same run (in one process, at 20 a second, the UI thread
# held the GIL half the time)
TOKENS_PER_BATCH = 60  # a batch of nothing but launch tokens waits for this many (a frame's cost is the same for
# few tokens as for many: on a loaded machine, where a launch writes 100-200 tokens a second, five frames a second
# made the screen's frames grow with the launch's wall time) ...
MAX_BATCH_S = 0.5  # ... for at most this long after the last batch


class FeedReady(Message):
    """Events are waiting in the screen's feed (posted from the MLX thread); ``now``: one of them
    ends a job, to be shown at once (the user waits for it; the next batch may be a while away)."""

    def __init__(self, now: bool = False):
        super().__init__()
        self.now = now


@dataclass(frozen=True)
class Phase:
    job: int
    text: str  # what the work is doing now (compiling, loading the circuit, prefill, checking)


@dataclass(frozen=True)
class LaunchBegin:
    job: int
    program: object  # the bound program
    prompt: list


@dataclass(frozen=True)
class LaunchToken:
    job: int
    token_id: int
    tok: object  # core.vocab.Token


@dataclass(frozen=True)
class ChatPrefill:
    job: int
    tokens: int  # prompt tokens the model is about to read (those its cache lacks)


@dataclass(frozen=True)
class ChatToken:
    job: int  # the chat model wrote one more token (reasoning, answer or tool-call markup)


@dataclass(frozen=True)
class ChatEvent:
    job: int
    event: object  # one of chat.session's events (TextPiece, ReasoningPiece, ToolCall..., TurnSummary)


@dataclass(frozen=True)
class ProgramOutput:
    job: int
    stream: str  # "stdout" or "stderr"
    text: str  # one line a program wrote, without its newline


@dataclass(frozen=True)
class LaunchRecorded:
    job: int
    record: object  # a program's launch ended: its runtime.program.LaunchRecord


@dataclass(frozen=True)
class JobDone:
    job: int
    outcome: object = None  # a /run's LaunchOutcome (a program's ProgramOutcome); None for a chat turn
    error: str | None = None  # a chat turn that failed
    cancelled: bool = False


class Feed:
    """Events from any thread, taken in order by the screen; ``wake`` is called (from the
    putting thread) when an event arrives and no wake-up is pending, ``wake_now`` (default
    ``wake``) for every event put with ``now``."""

    def __init__(self, wake: Callable[[], object], wake_now: Callable[[], object] | None = None):
        self._wake = wake
        self._wake_now = wake_now or wake
        self._lock = threading.Lock()
        self._events: list = []
        self._pending = False
        self.launch_tokens = 0  # LaunchToken events queued now

    def put(self, event, now: bool = False) -> None:
        with self._lock:
            self._events.append(event)
            wake, self._pending = not self._pending, True
            self.launch_tokens += isinstance(event, LaunchToken)
        if now:
            self._wake_now()
        elif wake:
            self._wake()

    def take(self) -> list:
        """Every event queued so far; the next :meth:`put` wakes the screen again."""
        with self._lock:
            events, self._events = self._events, []
            self._pending, self.launch_tokens = False, 0
        return events

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def tokens_only(self) -> bool:
        """Every event queued now is a launch token (nothing else the screen should show soon)."""
        with self._lock:
            return self.launch_tokens == len(self._events)


class FeedSink(LaunchEvents):
    """The MLX thread's side of one job: a runtime ``LaunchEvents`` sink (the launches it
    runs) and the chat's progress (``tui.chat.ChatProgress``), each call one event.
    A cancelled job stops at its next token (``LaunchCancelled``)."""

    def __init__(self, feed: Feed, job: int, cancel: threading.Event):
        self.feed, self.job, self.cancel = feed, job, cancel

    def _stop_if_cancelled(self) -> None:
        if self.cancel.is_set():
            raise LaunchCancelled()

    def phase(self, text: str) -> None:
        self.feed.put(Phase(self.job, text))

    def begin(self, program, prompt: list[int]) -> None:
        self._stop_if_cancelled()
        self.feed.put(LaunchBegin(self.job, program, prompt))

    def token(self, token_id: int, tok) -> None:
        self._stop_if_cancelled()
        self.feed.put(LaunchToken(self.job, token_id, tok))

    def prefill(self, tokens: int) -> None:
        self._stop_if_cancelled()
        self.feed.put(ChatPrefill(self.job, tokens))

    def generated(self) -> None:
        self._stop_if_cancelled()
        self.feed.put(ChatToken(self.job))

    def note(self, text: str) -> None:
        self.feed.put(Phase(self.job, text.strip("[]")))

    def output(self, stream: str, text: str) -> None:
        self.feed.put(ProgramOutput(self.job, stream, text))

    def record(self, record) -> None:
        self.feed.put(LaunchRecorded(self.job, record))

    def chat_event(self, event) -> None:
        self._stop_if_cancelled()
        self.feed.put(ChatEvent(self.job, event))

    def done(self, outcome=None, *, error: str | None = None, cancelled: bool = False) -> None:
        self.feed.put(JobDone(self.job, outcome, error, cancelled), now=True)
