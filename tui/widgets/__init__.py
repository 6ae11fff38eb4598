"""Dashboard widgets: chat transcript and input, launch token stream, machine state, status bar."""

from .launch_pane import LaunchPane
from .machine_pane import MachinePane
from .prompt_input import CommandSuggester, PromptInput
from .status_bar import Status, StatusBar
from .token_stream import TokenStream
from .transcript import Transcript

__all__ = ["CommandSuggester", "LaunchPane", "MachinePane", "PromptInput", "Status", "StatusBar", "TokenStream", "Transcript"]
