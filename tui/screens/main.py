"""The dashboard's main screen: chat | launch tokens over machine state, status bar, footer."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input

from qwengpu_mlx.tui import commands
from qwengpu_mlx.tui.chat import ChatBackend
from qwengpu_mlx.tui.launcher import MlxThread
from qwengpu_mlx.tui.model_label import run_label
from qwengpu_mlx.tui.screens.jobs import JobsMixin
from qwengpu_mlx.tui.screens.programs import ProgramsMixin
from qwengpu_mlx.tui.widgets import LaunchPane, LiveReply, MachinePane, PromptInput, Status, StatusBar, Transcript
from qwengpu_mlx.tui.screens.kernel_picker import KernelPicker

def _short_path(path) -> str:
    """``path`` relative to the working directory when under it (titles stay short)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class MainScreen(JobsMixin, ProgramsMixin, Screen):
    """Layout, input and commands; running jobs and showing their progress: ``jobs.JobsMixin``
    (a whole program's: ``programs.ProgramsMixin``)."""

    BINDINGS = [
        Binding("ctrl+r", "rerun", "Rerun last"),
        Binding("escape", "cancel", "Cancel", key_display="esc/^c"),
        Binding("ctrl+c", "cancel", "Cancel", show=False, priority=True),
        Binding("ctrl+l", "clear", "Clear"),
    ]

    def __init__(self, *, chat: ChatBackend, model: str | None = None, check: bool = True,
                 show_timing: bool = True, kernels_dir=None, initial: str | None = None):
        super().__init__()
        self.mlx = MlxThread()  # where every job runs or is driven from (see launcher.py: MLX streams)
        self.chat = chat
        self.model = model
        self.check = check
        self.show_timing = show_timing
        self.kernels_dir = kernels_dir
        self.initial = initial
        self.last_request: commands.RunRequest | None = None
        self._init_jobs()

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        model = run_label("default", self.chat)
        with Horizontal(id="main"):
            with Vertical(id="chat-pane"):
                yield Transcript(id="transcript")
                yield LiveReply(id="live-reply")
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
    def live_reply(self) -> LiveReply:
        return self.query_one(LiveReply)

    @property
    def machine_pane(self) -> MachinePane:
        return self.query_one(MachinePane)

    @property
    def status_bar(self) -> StatusBar:
        return self.query_one(StatusBar)

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
        self.cancel_job()

    def action_clear(self) -> None:
        self.transcript.clear_all()
        if not self.running:
            self.launch_pane.clear()
            self.launch_pane.show_title("launch")
            self.machine_pane.show(None)

    async def stop_launch(self) -> None:
        """Cancel a running job and wait until its threads have ended (MLX streams cleared)."""
        await self.stop_jobs()

    def on_unmount(self) -> None:
        if self.job is not None:
            self.job.cancel.set()  # a launch still running stops at its next token
        # then the MLX thread clears its streams and ends: at once when idle; a piece of work
        # still running (cancelled above) is not waited for long, the interpreter joins it at exit
        self.mlx.close(timeout=2.0)
        self.launches.close()  # the launch process (a cancelled launch there has stopped or is dropped)
