"""Dashboard widgets: chat transcript and input, launch token stream, machine state, status bar."""

from qwengpu_mlx.tui.widgets.launch_pane import LaunchPane
from qwengpu_mlx.tui.widgets.live_reply import LiveReply
from qwengpu_mlx.tui.widgets.machine_pane import MachinePane
from qwengpu_mlx.tui.widgets.prompt_input import CommandSuggester, PromptInput
from qwengpu_mlx.tui.widgets.status_bar import Status, StatusBar
from qwengpu_mlx.tui.widgets.token_stream import TokenStream
from qwengpu_mlx.tui.widgets.transcript import Transcript

__all__ = ["CommandSuggester", "LaunchPane", "LiveReply", "MachinePane", "PromptInput", "Status", "StatusBar", "TokenStream", "Transcript"]
