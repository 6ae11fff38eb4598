"""The main screen's jobs: a /run or a chat turn, run on the MLX thread, shown as it goes.

A job runs on the dashboard's one MLX thread (``launcher.MlxThread``), handed there by a
Textual thread worker that waits for it; the UI thread never waits. The job reports
through a ``feed.FeedSink``: every event is queued, and the screen applies what has
queued at most ``feed.DELIVERIES_PER_S`` times a second (the launch pane, the machine
pane, the status bar and the streaming reply redrawn once per batch), so the MLX thread
runs at the command line's pace.

Escape finishes the job on the screen at once (the transcript and status bar say it was
cancelled, the input takes the next line) and sets the job's cancel event; the MLX thread
stops at its next token, and the next job queues behind it there.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass

from textual import work
from textual.worker import Worker

from qwengpu_mlx.chat.cli import unclosed_line
from qwengpu_mlx.chat.session import (ReasoningPiece, TextPiece, ToolCallDone, ToolCallStarted, TurnSummary,
                                      UnclosedCall)
from qwengpu_mlx.core.float32 import outputs_text
from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.core.vocab import RECORD_KINDS
from qwengpu_mlx.runtime import LaunchCancelled

from qwengpu_mlx.tui import feed as fd
from qwengpu_mlx.tui.activity import Activity
from qwengpu_mlx.tui.commands import ProgramRequest, RunRequest
from qwengpu_mlx.tui.decode import LaunchDecoder
from qwengpu_mlx.tui.launch_process import LaunchProcess
from qwengpu_mlx.tui.launcher import LaunchOutcome
from qwengpu_mlx.tui.model_label import chat_label, circuit_label, run_label
from qwengpu_mlx.tui.program_job import ProgramOutcome

MACHINE_REFRESH_S = 0.5  # the machine pane's tables redraw at most this often mid-launch
TOKEN_POLL_S = 0.05  # how often a batch of launch tokens waiting for more is looked at again
KEYS_AFTER_S = 1.0  # the footer shows a job's keys (cancel enabled) once the job has run this long
_job_ids = itertools.count(1)


@dataclass
class Job:
    kind: str  # "run", "program" or "chat"
    request: RunRequest | ProgramRequest | None = None  # a /run's
    cancel: threading.Event = None
    id: int = 0
    started: float = 0.0  # time.monotonic() at its start

    def __post_init__(self):
        self.cancel = self.cancel or threading.Event()
        self.id = self.id or next(_job_ids)
        self.started = self.started or time.monotonic()


class JobsMixin:
    """The main screen's side of running jobs (its panes: ``launch_pane``, ``machine_pane``,
    ``status_bar``, ``transcript``, ``live_reply``)."""

    def _init_jobs(self) -> None:
        self.feed = fd.Feed(lambda: self.post_message(fd.FeedReady()),
                            lambda: self.post_message(fd.FeedReady(now=True)))
        self.launches = LaunchProcess()  # where /run launches run (see launch_process.py: the GIL)
        self.job: Job | None = None  # the job on the screen; None when idle
        self.job_workers: list[Worker] = []
        self.activity = Activity(self.show_timing)
        self.decoder: LaunchDecoder | None = None
        self.last_outcome: LaunchOutcome | None = None
        self._delivered_at = 0.0
        self._machine_at = 0.0  # when the machine pane was last redrawn
        self._machine_dirty = False
        self._machine_new = False  # the machine pane follows another launch: drawn at the batch's end
        self._launch_started = 0.0  # the first launch token's time (tokens/s)
        self._chat_launching = False  # a launch the chat started is streaming to the panes
        self._keys_shown: tuple | None = None  # what the footer's keys were last drawn for (``_keys_state``)
        self._panes_title: str | None = None  # a /run's launch pane title, until its panes are cleared for it

    @property
    def running(self) -> bool:
        """A /run launch, or a chat turn (which may be running launches), is under way."""
        return self.job is not None

    @property
    def chatting(self) -> bool:
        return self.job is not None and self.job.kind == "chat"

    # ------------------------------------------------------------------ starting
    def start_launch(self, req: RunRequest | ProgramRequest) -> None:
        """A /run: one launch, or a whole program (``programs.ProgramsMixin``)."""
        if self.running:
            self.transcript.say("a launch is running: cancel it first (escape or ctrl+c)", "error")
            return
        self.last_request = req
        self.decoder = None
        if isinstance(req, ProgramRequest):
            self.job = job = Job("program", req)
            self.start_program(req)
            self.job_workers.append(self._launch_worker(job, self.check))
            self._job_started(job)
            return
        self.job = job = Job("run", req)
        self._send_ahead(job)
        self._panes_title = f"launch: {req.describe()}"  # the panes change at the launch's first event
        self.activity.run()
        self.status_bar.set(model=run_label(req.machine, self.chat), kernel=req.source.stem, tokens=0,
                            tokens_per_s=None, steps=0, phase=self.activity.text(), check="on" if self.check else "off",
                            mismatches=0)
        self.transcript.say(f"launch {req.describe()} on the {circuit_label(req.machine)}", "dim")
        self.job_workers.append(self._launch_worker(job, self.check))
        self._job_started(job)

    def _send_ahead(self, job: Job) -> None:
        """The launch process gets the job now, before the screen echoes it (``LaunchProcess.send_ahead``),
        when no earlier job's thread is still draining the process's pipe."""
        self.job_workers = [w for w in self.job_workers if not w.is_finished]
        send = getattr(self.launches, "send_ahead", None)
        if send is not None and not self.job_workers:
            send(job.request, job.id, check=self.check)

    def send_chat(self, text: str) -> None:
        if self.running:
            busy = "the chat model is still answering" if self.chatting else \
                "a launch is running: cancel it first (escape or ctrl+c)"
            self.transcript.say(busy, "error")
            return
        self.job = job = Job("chat")
        self.activity.reset()
        self.status_bar.set(model=chat_label(self.chat), phase=self.activity.text())
        self.job_workers.append(self._chat_worker(job, text))
        self._job_started(job)

    def _job_started(self, job: Job) -> None:
        """The job's first screen updates wait a batch's interval (a launch that ends sooner is
        drawn once, with its outcome), and the footer's keys follow it after KEYS_AFTER_S."""
        self._delivered_at = time.monotonic()
        self.set_timer(KEYS_AFTER_S, lambda: self._show_keys() if self.job is job else None)

    def _keys_state(self) -> tuple:
        return self.running, self.last_request is not None

    def _show_keys(self) -> None:
        """The footer's keys redrawn when what they show changed (``check_action``). Why not at each
        job's start and end: the footer is rebuilt each time, and the whole screen laid out and
        redrawn (a fifth of a second on a loaded machine, more than a short launch takes); the keys
        themselves work at once either way (Textual asks ``check_action`` when a key comes)."""
        if self._keys_shown != self._keys_state():
            self._keys_shown = self._keys_state()
            self.refresh_bindings()

    # ------------------------------------------------------------------ workers (threads)
    @work(thread=True, group="launch", exit_on_error=False, description="model launch")
    def _launch_worker(self, job: Job, check: bool) -> None:
        """Thread worker: the launch runs in the launch process, driven from this thread (the
        process takes one job at a time: ``LaunchProcess.run`` waits for the one before to drain);
        a launcher that runs MLX work in this process instead (the bench's in-process one) is
        driven from the dashboard's MLX thread."""
        sink = fd.FeedSink(self.feed, job.id, job.cancel)
        req = job.request
        drive = self.launches.run
        try:
            if getattr(self.launches, "runs_elsewhere", False):  # no MLX here: no hop to the MLX thread and back
                outcome = drive(req, sink, job.cancel, job.id, check=check)
            else:
                outcome = self.mlx.call(drive, req, sink, job.cancel, job.id, check=check)
        except Exception as e:  # the MLX thread closed (the app is ending); the launch process reports the rest
            ended = ProgramOutcome if job.kind == "program" else LaunchOutcome
            outcome = ended(req, error=f"{type(e).__name__}: {e}")
        sink.done(outcome)

    @work(thread=True, group="chat", exit_on_error=False, description="chat reply")
    def _chat_worker(self, job: Job, text: str) -> None:
        """The chat loop's events, queued for the screen; its launches stream to the panes.

        The turn runs on the dashboard's MLX thread, every turn on the same one: the chat's
        prompt cache holds arrays from the turns before (see launcher.py)."""
        sink = fd.FeedSink(self.feed, job.id, job.cancel)

        def body():
            events = self.chat.reply(text, sink)
            try:
                for event in events:
                    sink.chat_event(event)  # raises LaunchCancelled once the job is cancelled
            finally:
                close = getattr(events, "close", None)
                if close is not None:  # a reply cut short ends here, on the MLX thread
                    close()

        try:
            self.mlx.call(body)
            sink.done()
        except LaunchCancelled:
            sink.done(cancelled=True)
        except Exception as e:  # the chat loop refuses what a model writes; anything else is shown, not raised
            sink.done(error=f"chat failed: {type(e).__name__}: {e}")

    # ------------------------------------------------------------------ delivery (UI thread)
    def on_feed_ready(self, message: fd.FeedReady) -> None:
        if message.now:
            self._deliver()
        else:
            self._deliver_when_due()

    def _deliver_when_due(self) -> None:
        """The batch waiting in the feed, once due: one interval after the last batch, and a batch
        of launch tokens alone when it holds ``feed.TOKENS_PER_BATCH`` of them (or has waited
        ``feed.MAX_BATCH_S``); looked at again every TOKEN_POLL_S until then."""
        if not len(self.feed):  # taken meanwhile (a job's end, a cancel): the next event wakes the screen again
            return
        now = time.monotonic()
        due = self._delivered_at + 1 / fd.DELIVERIES_PER_S
        if now >= due and self.feed.launch_tokens < fd.TOKENS_PER_BATCH and self.feed.tokens_only():
            due = min(now + TOKEN_POLL_S, self._delivered_at + fd.MAX_BATCH_S)
        if due > now:
            self.set_timer(due - now, self._deliver_when_due)
        else:
            self._deliver()

    def _deliver(self) -> None:
        """Apply every queued event of the job on the screen (others' are stale), then redraw once."""
        self._delivered_at = time.monotonic()
        with self.launch_pane.batch():  # the launch pane's lines formatted, laid out and scrolled once a batch
            for event in self.feed.take():
                if self.job is not None and event.job == self.job.id:
                    self._apply(event)
        self._redraw()

    def _apply(self, event) -> None:
        if isinstance(event, fd.LaunchToken):
            self._launch_token(event.token_id, event.tok)
        elif isinstance(event, fd.ChatToken):
            self.activity.generated()
        elif isinstance(event, fd.ChatEvent):
            self._chat_event(event.event)
        elif isinstance(event, fd.Phase):
            self.activity.phase(event.text)
        elif isinstance(event, fd.ChatPrefill):
            self.activity.prefill(event.tokens)
        elif isinstance(event, fd.LaunchBegin):
            self._launch_begin(event.program, event.prompt)
        elif isinstance(event, fd.ProgramOutput):
            self.program_output(event.stream, event.text)
        elif isinstance(event, fd.LaunchRecorded):
            self.program_launch_ended(event.record)
        elif isinstance(event, fd.JobDone):
            self._job_done(event)

    def _show_machine(self, state) -> None:
        """The machine pane follows a new launch (or none), drawn at the batch's end (``_redraw``)."""
        self.machine_pane.show(state, draw=False)
        self._machine_new = True

    def _redraw(self) -> None:
        """The status bar, and the machine pane when it changed (at most every MACHINE_REFRESH_S)."""
        now = time.monotonic()
        if self._machine_new or (self._machine_dirty and (now - self._machine_at >= MACHINE_REFRESH_S
                                                          or self.job is None)):
            self.machine_pane.refresh_state()
            self._machine_at, self._machine_dirty, self._machine_new = now, False, False
        if self.job is None:
            return
        changes = {"phase": self.activity.text()}
        dec = self.decoder
        if dec is not None and (self.job.kind != "chat" or self._chat_launching):
            elapsed = time.perf_counter() - self._launch_started
            changes.update(tokens=dec.count, steps=dec.kinds.get("EXEC", 0),
                           tokens_per_s=dec.count / elapsed if dec.count and elapsed > 0 else None)
        self.status_bar.set(**changes)

    # ------------------------------------------------------------------ launches
    def _fresh_panes(self) -> None:
        """The launch and machine panes emptied for the /run under way, at its first event that
        shows there, not at the key press: a short launch's panes are then drawn once, with its
        first tokens or its outcome, where clearing them at once cost a frame of their own (on a
        loaded machine, CPU out of the launch) that no one sees for long."""
        if self._panes_title is None:
            return
        self.launch_pane.clear()
        self.launch_pane.show_title(self._panes_title)
        self._panes_title = None
        self._show_machine(None)

    def _launch_begin(self, program, prompt) -> None:
        job = self.job
        self._fresh_panes()
        if job.kind == "chat":  # a launch the chat started: the panes follow it as they follow /run
            self.launch_pane.clear()
            self.launch_pane.show_title(f"launch (chat): {program.kernel}")
            self.status_bar.set(tokens=0, tokens_per_s=None, steps=0)
            self._chat_launching = True
        elif job.kind == "program":  # its launches one after another in the pane
            self.program_launch_begins(program.kernel)
            self.status_bar.set(tokens=0, tokens_per_s=None, steps=0)
        machine = MACHINES[job.request.machine if job.request is not None else "default"]
        self.decoder = LaunchDecoder(program, machine)
        self.launch_pane.add_lines(self.decoder.prompt_lines(prompt))
        self._show_machine(self.decoder.state)
        self.status_bar.set(kernel=program.kernel)
        self.activity.launch_begin()
        self._launch_started = time.perf_counter()

    def _launch_token(self, token_id: int, tok) -> None:
        dec = self.decoder
        if dec is None:
            return
        if dec.count == 0:
            self.activity.launch_token()
            self._launch_started = time.perf_counter()
        action, line = dec.feed(token_id, tok)
        if line is not None:
            if action == "new":
                self.launch_pane.add(line)
            else:
                self.launch_pane.update(line)
        if dec.closed is not None:
            self.launch_pane.update(dec.closed)
        if dec.closed is not None or tok.kind not in ("C0", "C1") + RECORD_KINDS:
            self._machine_dirty = True  # records update the machine on their last chunk

    def _job_done(self, event: fd.JobDone) -> None:
        if self.job.kind == "run":
            self._launch_done(event.outcome)
        elif self.job.kind == "program":
            self.last_outcome = event.outcome
            self.program_done(event.outcome)
        elif event.cancelled:
            self._chat_cancelled()
        elif event.error:
            self._chat_failed(event.error, "error")
        else:
            self._flush_reply(self.reply_kind)
            self.status_bar.set(phase="done")
        self._end_job()

    def _end_job(self) -> None:
        """The job is over; the footer's keys follow once the frame with its outcome is drawn (after
        a job longer than KEYS_AFTER_S they change, and the footer's rebuild lays the whole screen
        out: the outcome's frame had waited for that layout)."""
        self.job = None
        self._chat_launching = False
        self.call_after_refresh(self._show_keys)

    def _launch_done(self, out: LaunchOutcome) -> None:
        self.last_outcome = out
        self._fresh_panes()
        t = self.transcript
        if out.cancelled:
            self._show_cancelled_launch()
        elif out.error:
            self.launch_pane.note(out.error)
            t.say(out.error, "error")
            self.status_bar.set(phase="error")
        else:
            self._show_finished_launch(out)

    def _show_cancelled_launch(self) -> None:
        ntok = self.decoder.count if self.decoder else 0
        self.launch_pane.note(f"cancelled after {ntok} tokens")
        self.transcript.say(f"launch cancelled after {ntok} tokens", "info")
        self.status_bar.set(phase="cancelled")

    def _show_finished_launch(self, out: LaunchOutcome) -> None:
        launch, dec, t = out.launch, self.decoder, self.transcript
        if dec is not None:
            dec.finish(launch.memory)
            self._machine_dirty = True
        check = "off" if out.problems is None else ("exact" if not out.problems else "mismatch")
        tps = out.tokens / out.seconds if out.seconds > 0 else None
        self.status_bar.set(tokens=out.tokens, steps=launch.steps, tokens_per_s=tps, check=check,
                            mismatches=len(out.problems or []), phase="done")
        summary = f"{out.program.kernel}: {launch.steps} steps, {out.tokens} tokens"
        if self.show_timing:
            summary += f", {out.seconds:.1f} s ({tps:.1f} tokens/s)" if tps else ""
            if out.build_seconds:
                summary += f"; circuit built in {out.build_seconds:.1f} s"
        if out.problems is not None:
            summary += "; check: " + ("exact" if not out.problems else f"MISMATCH ({len(out.problems)})")
        t.say(summary, "result")
        t.say("  ".join(f"{k} = {outputs_text(out.program, k, v)}" for k, v in out.outputs.items()), "result")
        for p in (out.problems or [])[:8]:
            t.say(f"check: {p}", "error")

    # ------------------------------------------------------------------ chat
    @property
    def reply_kind(self) -> str:
        return "assistant" if self.chat.available else "info"

    def _chat_event(self, event) -> None:
        """One event of the chat loop (``qwengpu_mlx.chat.session``) on the screen."""
        t = self.transcript
        if isinstance(event, ReasoningPiece):
            self.live_reply.add(reasoning=event.text)
            self.activity.writing("reasoning")
        elif isinstance(event, TextPiece):
            self.live_reply.add(answer=event.text)
            self.activity.writing("answering")
        elif isinstance(event, ToolCallStarted):
            self._flush_reply(self.reply_kind)
            args = ", ".join(f"{k}={v!r}" for k, v in event.arguments.items())
            t.say(f"tool call: {event.name}({args})", "dim")
            self.activity.tool_call(event.name, event.arguments)
        elif isinstance(event, ToolCallDone):
            self._tool_done(event.outcome)
        elif isinstance(event, UnclosedCall):  # not run, and never the answer
            reasoning, answer = self.live_reply.take()
            if reasoning.strip():
                t.say(reasoning.strip(), "reasoning")
            if answer.strip() and event.started:  # the text before the call's start is the message's
                t.say(answer.strip(), self.reply_kind)
            t.say(unclosed_line(event), "error")
        elif isinstance(event, TurnSummary):
            self._flush_reply(self.reply_kind)
            if self.show_timing:
                st = event.stats
                t.say(f"prompt {st.prompt_tokens} tokens ({st.prompt_tps:.1f} tokens/s), generation "
                      f"{st.generation_tokens} tokens ({st.generation_tps:.1f} tokens/s), peak memory "
                      f"{event.peak_memory_gb:.2f} GB", "dim")

    def _flush_reply(self, kind: str) -> None:
        """The message streamed so far, into the transcript: its reasoning as one entry in its
        own style (never the answer's), then its text."""
        reasoning, answer = self.live_reply.take()
        if reasoning.strip():
            self.transcript.say(reasoning.strip(), "reasoning")
        if answer.strip():
            self.transcript.say(answer.strip(), kind)

    def _tool_done(self, outcome) -> None:
        self._chat_launching = False
        t = self.transcript
        for rec in outcome.launches:
            verdict = {True: "exact", False: "NOT EXACT", None: "not checked"}[rec.exact]
            t.say(f"launch {rec.kernel}: {rec.tokens} tokens, check: {verdict}", "result")
        if self.decoder is not None and outcome.launches:
            last = outcome.launches[-1]
            self.decoder.finish(last.launch.memory)
            self._machine_dirty = True
            self.status_bar.set(check={True: "exact", False: "mismatch", None: "off"}[last.exact],
                                tokens=last.tokens, tokens_per_s=last.tokens_per_s, steps=last.launch.steps)
        if outcome.error:  # the tool's "error: ..." shown once, by the transcript's error prefix
            t.say(f"tool response: {outcome.content.removeprefix('error:').strip()}", "error")
        else:
            t.say(f"tool response: {outcome.content}", "result")

    def _chat_failed(self, text: str, kind: str) -> None:
        self._flush_reply("assistant")
        self.transcript.say(text, kind)
        self.status_bar.set(phase="error" if kind == "error" else "done")

    def _chat_cancelled(self) -> None:
        if self._chat_launching and self.decoder is not None:  # a launch was cut short
            self.launch_pane.note(f"cancelled after {self.decoder.count} tokens")
        self._flush_reply("assistant")
        self.transcript.say("chat cancelled: this question and its partial reply are left out of the "
                            "conversation", "info")
        self.status_bar.set(phase="cancelled")

    # ------------------------------------------------------------------ cancelling
    def cancel_job(self) -> None:
        """Escape: the job ends on the screen now; its work stops at the next token."""
        job = self.job
        if job is None:
            return
        job.cancel.set()
        self._deliver()  # what the job did before the key press is shown first
        if self.job is not job:  # it ended in that batch
            return
        if job.kind == "run":
            self._launch_done(LaunchOutcome(job.request, cancelled=True))
        elif job.kind == "program":
            self.last_outcome = ProgramOutcome(job.request, cancelled=True)
            self.program_done(self.last_outcome)
        else:
            self._chat_cancelled()
        if self._machine_new:  # the panes were emptied for the cancelled launch just now
            self.machine_pane.refresh_state()
        self._machine_dirty = self._machine_new = False
        self._end_job()

    async def stop_jobs(self) -> None:
        """Cancel the job under way and wait until the threads that ran jobs are done."""
        self.cancel_job()
        for w in self.job_workers:
            if not w.is_finished:
                try:
                    await w.wait()
                except Exception:
                    pass
        self.job_workers = [w for w in self.job_workers if not w.is_finished]
