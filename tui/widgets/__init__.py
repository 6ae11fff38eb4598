"""Dashboard widgets: chat transcript, launch token stream, machine state, status bar."""

from .launch_pane import LaunchPane
from .machine_pane import MachinePane
from .status_bar import Status, StatusBar
from .token_stream import TokenStream
from .transcript import Transcript

__all__ = ["LaunchPane", "MachinePane", "Status", "StatusBar", "TokenStream", "Transcript"]
