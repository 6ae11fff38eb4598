"""What the status bar says a job is doing, built from the feed's events (``tui.feed``).

A chat turn goes through stages the user should see, on a slow model each for minutes:
the prefill (with its token count), the reasoning, the answer (each with its tokens and
tokens/s), a tool call, and each of its launches as "launch k of n" (n from the
expression, before it runs). A /run is one launch: "launch 1 of 1". The runtime's own
phases (compiling, loading the circuit, the launch's prefill, the check) follow the
stage they belong to.
"""

from __future__ import annotations

import time

from qwengpu_mlx.chat.expression import ExpressionError, count_launches, parse
from qwengpu_mlx.chat.tools import GPU_EVAL_NAME, GPU_KERNEL_NAME


def launches_expected(name: str, arguments: dict) -> int | None:
    """How many launches a tool call will make (None: not known before it runs): an
    expression one per operation, a kernel one."""
    if name == GPU_KERNEL_NAME:
        return 1
    if name != GPU_EVAL_NAME or not isinstance(arguments.get("expression"), str):
        return None
    try:
        return count_launches(parse(arguments["expression"]))
    except (ExpressionError, ValueError):
        return None


class Activity:
    """The status bar's phase for the job under way."""

    def __init__(self, show_timing: bool = True, clock=time.perf_counter):
        self.show_timing = show_timing
        self.clock = clock
        self.reset()

    def reset(self) -> None:
        self.stage = "starting"
        self.detail = ""  # the runtime's phase within the stage
        self.tokens = 0  # the chat model's tokens in this message
        self.first_token_at: float | None = None
        self.launch_index = 0  # launches begun in this job
        self.launches_total: int | None = None  # the current tool call's, when known

    # ------------------------------------------------------------------ chat
    def prefill(self, tokens: int) -> None:
        self.stage, self.detail = f"prefill: {tokens} prompt tokens", ""
        self.tokens, self.first_token_at = 0, None

    def generated(self) -> None:
        if self.first_token_at is None:
            self.first_token_at = self.clock()
            self.stage = "generating"
        self.tokens += 1

    def writing(self, what: str) -> None:
        """``reasoning`` or ``answering``: what the chat model's tokens are now."""
        self.stage, self.detail = what, ""

    def tool_call(self, name: str, arguments: dict) -> None:
        self.stage, self.detail = f"tool call: {name}", ""
        self.launch_index, self.launches_total = 0, launches_expected(name, arguments)

    # ------------------------------------------------------------------ launches
    def run(self) -> None:
        """A /run: one launch."""
        self.reset()
        self.launches_total = 1

    def launch_begin(self) -> None:
        self.launch_index += 1
        self.stage, self.detail = "launch", ""

    def phase(self, text: str) -> None:
        self.detail = text

    def launch_token(self) -> None:
        self.detail = ""  # the launch's prefill is over

    # ------------------------------------------------------------------ text
    def text(self) -> str:
        stage = self.stage
        if stage == "launch":
            total = f" of {self.launches_total}" if self.launches_total else ""
            stage = f"launch {self.launch_index}{total}"
        elif stage in ("reasoning", "answering", "generating"):
            stage += f": {self.tokens} tokens"
            if self.show_timing and self.first_token_at is not None:
                elapsed = self.clock() - self.first_token_at
                if elapsed > 0 and self.tokens > 1:
                    stage += f", {(self.tokens - 1) / elapsed:.1f} tok/s"
        return f"{stage}: {self.detail}" if self.detail else stage
