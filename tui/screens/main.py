"""The dashboard's main screen: chat | launch tokens over machine state, status bar, footer."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input
from textual.worker import Worker

from qwengpu_mlx.chat.session import ReasoningPiece, TextPiece, ToolCallDone, ToolCallStarted, TurnSummary
from qwengpu_mlx.core.machine import MACHINES
from qwengpu_mlx.runtime import CircuitStore, LaunchCancelled
from qwengpu_mlx.core.vocab import RECORD_KINDS

from qwengpu_mlx.tui import commands
from qwengpu_mlx.tui.chat import ChatBackend
from qwengpu_mlx.tui.decode import LaunchDecoder
from qwengpu_mlx.tui.launcher import LaunchOutcome, MlxThread, execute_launch
from qwengpu_mlx.tui.widgets import LaunchPane, MachinePane, PromptInput, Status, StatusBar, Transcript
from qwengpu_mlx.tui.screens.kernel_picker import KernelPicker

MODEL_LABEL = "embedded circuit (narrow)"


def _short_path(path) -> str:
    """``path`` relative to the working directory when under it (titles stay short)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class _UiSink:
    """Launch callbacks from the MLX thread, each run on the UI thread (``call_from_thread``)."""

    def __init__(self, screen: "MainScreen", cancel: threading.Event):
        self.screen = screen
        self.cancel = cancel

    def _call(self, fn, *args):
        if self.cancel.is_set():
            raise LaunchCancelled()
        try:
            self.screen.app.call_from_thread(fn, *args)
        except RuntimeError:  # the app is not running any more: stop the launch
            self.cancel.set()
            raise LaunchCancelled() from None

    def phase(self, text):
        self._call(self.screen._ui_phase, text)

    def begin(self, request, program, prompt):
        self._call(self.screen._ui_begin, request, program, prompt)

    def token(self, token_id, tok):
        self._call(self.screen._ui_token, token_id, tok)


class _ChatLaunchSink(_UiSink):
    """The runtime's LaunchEvents for launches the chat starts (no RunRequest behind them)."""

    def begin(self, program, prompt):
        self._call(self.screen._ui_chat_launch_begin, program, prompt)


class MainScreen(Screen):
    BINDINGS = [
        Binding("ctrl+r", "rerun", "Rerun last"),
        Binding("escape", "cancel", "Cancel", key_display="esc/^c"),
        Binding("ctrl+c", "cancel", "Cancel", show=False, priority=True),
        Binding("ctrl+l", "clear", "Clear"),
    ]

    def __init__(self, *, chat: ChatBackend, model: str | None = None, check: bool = True,
                 show_timing: bool = True, kernels_dir=None, initial: str | None = None,
                 store: CircuitStore | None = None):
        super().__init__()
        self.store = store or CircuitStore()  # the circuits this dashboard's launches run on
        self.mlx = MlxThread()  # where every launch and chat turn runs (see launcher.py: MLX streams)
        self.chat = chat
        self.model = model
        self.check = check
        self.show_timing = show_timing
        self.kernels_dir = kernels_dir
        self.initial = initial
        self.last_request: commands.RunRequest | None = None
        self.last_outcome: LaunchOutcome | None = None
        self.decoder: LaunchDecoder | None = None
        self._cancel = threading.Event()
        self._launch_worker_obj: Worker | None = None
        self._chat_worker_obj: Worker | None = None
        self._t_begin = 0.0
        self._busy = False  # a launch is running (cleared by _ui_done, before its worker returns)
        self._reply_text = ""  # the assistant's text streamed since the last transcript line
        self._reasoning_text = ""  # the reasoning streamed since the last transcript line
        self._chat_launching = False  # a launch the chat started is streaming to the panes

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        model = MODEL_LABEL if not self.chat.available else f"{MODEL_LABEL}; chat: {self.chat.name}"
        with Horizontal(id="main"):
            with Vertical(id="chat-pane"):
                yield Transcript(id="transcript")
                yield PromptInput(placeholder="/run dot · /kernels · /help · or chat",
                                  kernels=self._kernel_names(), id="prompt")
            with Vertical(id="right"):
                yield LaunchPane(id="launch-pane")
                yield MachinePane(id="machine-pane")
        yield StatusBar(Status(model=model, check="on" if self.check else "off", show_timing=self.show_timing),
                        id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#chat-pane").border_title = "chat"
        t = self.transcript
        t.say("qwengpu-mlx: a SIMT GPU compiled into a Qwen3.5 model's weights. The model writes each "
              "launch token by token; the panes on the right decode it as it streams.", "dim")
        t.say("Try /run examples/kernels/dot.cu a=1,2,3 b=4,5,6 out=0 n=3 · /kernels · /help", "dim")
        self.query_one("#prompt", Input).focus()
        if self.initial:
            text = self.initial.strip()
            if not text.startswith("/"):
                text = "/run " + text
            self.call_after_refresh(self.submit, text)

    def _kernel_names(self) -> list[str]:
        """What /run completes: each example's name and its path from the repository."""
        names = [n.removesuffix(".cu") for n, _ in commands.list_kernels(commands.examples_dir(self.kernels_dir))]
        return names + [f"examples/kernels/{n}.cu" for n in names]

    @property
    def prompt(self) -> PromptInput:
        return self.query_one("#prompt", PromptInput)

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def launch_pane(self) -> LaunchPane:
        return self.query_one(LaunchPane)

    @property
    def machine_pane(self) -> MachinePane:
        return self.query_one(MachinePane)

    @property
    def status_bar(self) -> StatusBar:
        return self.query_one(StatusBar)

    @property
    def running(self) -> bool:
        """A /run launch, or a chat turn (which may be running launches), is under way."""
        return self._busy or self.chatting

    @property
    def chatting(self) -> bool:
        return self._chat_worker_obj is not None and not self._chat_worker_obj.is_finished

    # ------------------------------------------------------------------ input
    @on(Input.Submitted, "#prompt")
    def _submitted(self, event: Input.Submitted) -> None:
        event.input.value = ""
        self.prompt.remember(event.value)
        self.submit(event.value)

    def submit(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        t = self.transcript
        t.say(text, "user")
        try:
            cmd = commands.parse(text, self.kernels_dir)
        except commands.CommandError as e:
            t.say(str(e), "error")
            return
        if cmd.name == "run":
            self.start_launch(cmd.run)
        elif cmd.name == "check":
            if cmd.flag is not None:
                self.check = cmd.flag
                self.status_bar.set(check="on" if self.check else "off")
            t.say(f"check against the reference interpreter: {'on' if self.check else 'off'}")
        elif cmd.name == "kernels":
            self.list_kernels()
        elif cmd.name == "help":
            t.say(commands.HELP.format(check="on" if self.check else "off"))
        else:
            self.send_chat(cmd.text)

    def list_kernels(self) -> None:
        """The kernels in a picker (an OptionList); the one chosen runs as ``/run NAME``."""
        d = commands.examples_dir(self.kernels_dir)
        ks = commands.list_kernels(d)
        self.transcript.say(f"{len(ks)} kernels: pick one to run (enter), escape closes", "dim")
        self.app.push_screen(KernelPicker(ks, _short_path(d)), self._picked)

    def _picked(self, name: str | None) -> None:
        if name:
            self.prompt.remember(f"/run {name}")
            self.submit(f"/run {name}")

    # ------------------------------------------------------------------ launches
    def start_launch(self, req: commands.RunRequest) -> None:
        if self.running:
            self.transcript.say("a launch is running: cancel it first (escape or ctrl+c)", "error")
            return
        self.last_request = req
        self._cancel = threading.Event()
        self.decoder = None
        self.launch_pane.clear()
        self.launch_pane.border_title = f"launch: {req.describe()}"
        self.machine_pane.show(None)
        self.status_bar.set(kernel=req.source.stem, tokens=0, tokens_per_s=None, steps=0, phase="starting",
                            check="on" if self.check else "off", mismatches=0)
        self.transcript.say(f"launch {req.describe()} on the {MODEL_LABEL}", "dim")
        self._busy = True
        self._launch_worker_obj = self._launch_worker(req, self.check, self._cancel)
        self.refresh_bindings()

    @work(thread=True, group="launch", exit_on_error=False, description="model launch")
    def _launch_worker(self, req: commands.RunRequest, check: bool, cancel: threading.Event) -> None:
        """Thread worker: the launch runs on the dashboard's MLX thread, this worker waits for it."""
        sink = _UiSink(self, cancel)
        try:
            outcome = self.mlx.call(execute_launch, req, sink, cancel, check=check, store=self.store,
                                    machine=MACHINES[req.machine])
        except Exception as e:  # pragma: no cover - execute_launch catches its own errors
            outcome = LaunchOutcome(req, error=f"{type(e).__name__}: {e}")
        try:
            self.app.call_from_thread(self._ui_done, outcome)
        except RuntimeError:
            pass

    def _ui_phase(self, text: str) -> None:
        self.status_bar.set(phase=text)

    def _ui_begin(self, req, program, prompt) -> None:
        machine = MACHINES[req.machine if req is not None else "default"]  # the chat's launches: the default
        self.decoder = LaunchDecoder(program, machine)
        for line in self.decoder.prompt_lines(prompt):
            self.launch_pane.add(line)
        self.machine_pane.show(self.decoder.state)
        self.status_bar.set(kernel=program.kernel)
        self._t_begin = time.perf_counter()

    def _ui_token(self, token_id: int, tok) -> None:
        dec = self.decoder
        if dec is None:
            return
        action, line = dec.feed(token_id, tok)
        if line is not None:
            if action == "new":
                self.launch_pane.add(line)
            else:
                self.launch_pane.update(line)
        if dec.closed is not None:
            self.launch_pane.update(dec.closed)
        if dec.closed is not None or tok.kind not in ("C0", "C1") + RECORD_KINDS:
            self.machine_pane.refresh_state()  # records update the machine on their last chunk
        elapsed = time.perf_counter() - self._t_begin
        self.status_bar.set(tokens=dec.count, steps=dec.kinds.get("EXEC", 0),
                            tokens_per_s=dec.count / elapsed if elapsed > 0 else None,
                            phase="running" if not self._cancel.is_set() else "cancelling")

    def _ui_done(self, out: LaunchOutcome) -> None:
        self._busy = False
        self.last_outcome = out
        t = self.transcript
        dec = self.decoder
        ntok = dec.count if dec else 0
        if out.cancelled:
            self.launch_pane.note(f"cancelled after {ntok} tokens")
            t.say(f"launch cancelled after {ntok} tokens", "info")
            self.status_bar.set(phase="cancelled", check="off" if not self.check else "on")
        elif out.error:
            self.launch_pane.note(out.error)
            t.say(out.error, "error")
            self.status_bar.set(phase="error")
        else:
            launch = out.launch
            if dec is not None:
                dec.finish(launch.memory)
                self.machine_pane.refresh_state()
            if out.problems is None:
                check = "off"
            else:
                check = "exact" if not out.problems else "mismatch"
            tps = out.tokens / out.seconds if out.seconds > 0 else None
            self.status_bar.set(tokens=out.tokens, steps=launch.steps, tokens_per_s=tps, check=check,
                                mismatches=len(out.problems or []), phase="done")
            outs = "  ".join(f"{k} = {v}" for k, v in out.outputs.items())
            summary = f"{out.program.kernel}: {launch.steps} steps, {out.tokens} tokens"
            if self.show_timing:
                summary += f", {out.seconds:.1f} s ({tps:.1f} tokens/s)" if tps else ""
                if out.build_seconds:
                    summary += f"; circuit built in {out.build_seconds:.1f} s"
            if out.problems is not None:
                summary += "; check: " + ("exact" if not out.problems else f"MISMATCH ({len(out.problems)})")
            t.say(summary, "result")
            t.say(outs, "result")
            for p in (out.problems or [])[:8]:
                t.say(f"check: {p}", "error")
        self.refresh_bindings()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        w = event.worker
        if w is self._chat_worker_obj and w.is_finished:
            self.refresh_bindings()
        if w is self._launch_worker_obj and w.is_finished and self._busy:  # died without reporting
            self._busy = False
            self.status_bar.set(phase="error")
            if w.error is not None:
                self.transcript.say(f"launch worker failed: {w.error}", "error")
            self.refresh_bindings()

    # ------------------------------------------------------------------ chat
    def send_chat(self, text: str) -> None:
        if self.chatting:
            self.transcript.say("the chat model is still answering", "error")
            return
        if self.running:
            self.transcript.say("a launch is running: cancel it first (escape or ctrl+c)", "error")
            return
        self._cancel = threading.Event()
        self._chat_worker_obj = self._chat_worker(text, self._cancel)

    @work(thread=True, group="chat", exit_on_error=False, description="chat reply")
    def _chat_worker(self, text: str, cancel: threading.Event) -> None:
        """The chat loop's events, each shown on the UI thread; its launches stream to the panes.

        The turn runs on the dashboard's MLX thread, every turn on the same one: the chat's
        prompt cache holds arrays from the turns before (see launcher.py)."""
        sink = _ChatLaunchSink(self, cancel)

        def body():
            events = self.chat.reply(text, sink)
            try:
                for event in events:
                    if cancel.is_set():
                        raise LaunchCancelled()
                    self.app.call_from_thread(self._ui_chat_event, event)
            finally:
                close = getattr(events, "close", None)
                if close is not None:  # a reply cut short ends here, on the MLX thread
                    close()

        try:
            self.mlx.call(body)
            self._call_ui(self._flush_reply, "assistant" if self.chat.available else "info")
        except LaunchCancelled:
            self._call_ui(self._ui_chat_cancelled)
        except Exception as e:  # the chat loop refuses what a model writes; anything else is shown, not raised
            self._call_ui(self._ui_chat_failed, f"chat failed: {type(e).__name__}: {e}", "error")

    def _call_ui(self, fn, *args) -> None:
        try:
            self.app.call_from_thread(fn, *args)
        except RuntimeError:  # the app has stopped
            pass

    def _ui_chat_event(self, event) -> None:
        """One event of the chat loop (``qwengpu_mlx.chat.session``) on the transcript and status bar."""
        t = self.transcript
        kind = "assistant" if self.chat.available else "info"
        if isinstance(event, ReasoningPiece):
            self._reasoning_text += event.text
            return
        self._flush_reasoning()
        if isinstance(event, TextPiece):
            self._reply_text += event.text
        elif isinstance(event, ToolCallStarted):
            self._flush_reply(kind)
            args = ", ".join(f"{k}={v!r}" for k, v in event.arguments.items())
            t.say(f"tool call: {event.name}({args})", "dim")
        elif isinstance(event, ToolCallDone):
            self._ui_chat_tool_done(event.outcome)
        elif isinstance(event, TurnSummary):
            self._flush_reply(kind)
            if self.show_timing:
                st = event.stats
                t.say(f"prompt {st.prompt_tokens} tokens ({st.prompt_tps:.1f} tokens/s), generation "
                      f"{st.generation_tokens} tokens ({st.generation_tps:.1f} tokens/s), peak memory "
                      f"{event.peak_memory_gb:.2f} GB", "dim")

    def _flush_reasoning(self) -> None:
        """The reasoning streamed so far, as one entry in its own style (never the answer's)."""
        if self._reasoning_text.strip():
            self.transcript.say(self._reasoning_text.strip(), "reasoning")
        self._reasoning_text = ""

    def _flush_reply(self, kind: str) -> None:
        self._flush_reasoning()
        if self._reply_text.strip():
            self.transcript.say(self._reply_text.strip(), kind)
        self._reply_text = ""

    def _ui_chat_tool_done(self, outcome) -> None:
        self._chat_launching = False
        t = self.transcript
        for rec in outcome.launches:
            verdict = {True: "exact", False: "NOT EXACT", None: "not checked"}[rec.exact]
            t.say(f"launch {rec.kernel}: {rec.tokens} tokens, check: {verdict}", "result")
        if self.decoder is not None and outcome.launches:
            last = outcome.launches[-1]
            self.decoder.finish(last.launch.memory)
            self.machine_pane.refresh_state()
            self.status_bar.set(phase="done", check={True: "exact", False: "mismatch", None: "off"}[last.exact])
        if outcome.error:  # the tool's "error: ..." shown once, by the transcript's error prefix
            t.say(f"tool response: {outcome.content.removeprefix('error:').strip()}", "error")
        else:
            t.say(f"tool response: {outcome.content}", "result")

    def _ui_chat_launch_begin(self, program, prompt) -> None:
        """A launch the chat started: the panes follow it as they follow /run."""
        self.launch_pane.clear()
        self.launch_pane.border_title = f"launch (chat): {program.kernel}"
        self.status_bar.set(kernel=program.kernel, tokens=0, tokens_per_s=None, steps=0, phase="running")
        self._ui_begin(None, program, prompt)
        self._chat_launching = True

    def _ui_chat_failed(self, text: str, kind: str) -> None:
        self._chat_launching = False
        self._flush_reply("assistant")
        self.transcript.say(text, kind)

    def _ui_chat_cancelled(self) -> None:
        if self._chat_launching and self.decoder is not None:  # a launch was cut short
            self.launch_pane.note(f"cancelled after {self.decoder.count} tokens")
        self._ui_chat_failed("chat cancelled: this question and its partial reply are left out of the "
                             "conversation", "info")
        self.status_bar.set(phase="cancelled")

    # ------------------------------------------------------------------ actions
    def check_action(self, action: str, parameters) -> bool | None:
        if action == "cancel":
            return True if self.running else None  # None: shown disabled; ctrl+c then reaches the input
        if action == "rerun":
            return True if (self.last_request is not None and not self.running) else None
        return True

    def action_rerun(self) -> None:
        if self.last_request is not None:
            self.transcript.say(f"/run {self.last_request.describe()}", "user")
            self.start_launch(self.last_request)

    def action_cancel(self) -> None:
        if self.running:
            self._cancel.set()
            self.status_bar.set(phase="cancelling")

    def action_clear(self) -> None:
        self.transcript.clear_all()
        if not self.running:
            self.launch_pane.clear()
            self.launch_pane.border_title = "launch"
            self.machine_pane.show(None)

    async def stop_launch(self) -> None:
        """Cancel a running launch and wait until its threads have ended (MLX streams cleared)."""
        self._cancel.set()
        for w in (self._launch_worker_obj, self._chat_worker_obj):
            if w is not None and not w.is_finished:
                try:
                    await w.wait()
                except Exception:
                    pass

    def on_unmount(self) -> None:
        self._cancel.set()  # a launch still running stops at its next token
        # then the MLX thread clears its streams and ends: at once when idle; a piece of work
        # still running (cancelled above) is not waited for long, the interpreter joins it at exit
        self.mlx.close(timeout=2.0)
