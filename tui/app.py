"""``qwengpu-mlx tui``: the Textual dashboard.

Chat on the left (commands and, with a checkpoint, conversation), the launch as the
model writes it (top right) and the machine state decoded from it (bottom right), a
status bar and the key bindings in the footer. Launches run on the embedded circuit
(no download); model work runs in thread workers, the UI never waits for it.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.binding import Binding

from qwengpu_mlx.tui.chat import ChatBackend, chat_backend
from qwengpu_mlx.tui.palette import DashboardCommands
from qwengpu_mlx.tui.screens import MainScreen


class DashboardApp(App):
    """The dashboard.

    ``model``: a checkpoint directory or repository for chat (None: circuit only).
    ``initial``: a command to run at start (``/run ...``; a bare kernel line gets ``/run``).
    ``show_timing=False`` hides tokens/s and durations (deterministic screenshots).
    """

    CSS_PATH = "app.tcss"
    TITLE = "qwengpu-mlx"
    SUB_TITLE = "a SIMT GPU inside Qwen3.5's weights"
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", priority=True)]
    COMMANDS = App.COMMANDS | {DashboardCommands}  # ctrl+p: the dashboard's actions beside Textual's

    def __init__(self, *, model: str | None = None, initial: str | None = None, check: bool = True,
                 show_timing: bool = True, kernels_dir: str | Path | None = None,
                 chat: ChatBackend | None = None):
        super().__init__()
        self.model = model
        self.initial = initial
        self.check = check
        self.show_timing = show_timing
        self.kernels_dir = Path(kernels_dir) if kernels_dir else None
        self.chat = chat if chat is not None else chat_backend(model)

    def get_default_screen(self) -> MainScreen:
        return MainScreen(chat=self.chat, model=self.model, check=self.check, show_timing=self.show_timing,
                          kernels_dir=self.kernels_dir, initial=self.initial)

    @property
    def main(self) -> MainScreen:
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        raise LookupError("no main screen")

    async def action_quit(self) -> None:
        """Quit after any running launch has stopped and its thread has cleared its MLX streams."""
        try:
            await self.main.stop_launch()
        except LookupError:
            pass
        self.exit()
