"""The Textual dashboard (``qwengpu-mlx tui``): chat, live launch tokens, machine state.

Layout: :mod:`.app` (the App), :mod:`.screens`, :mod:`.widgets`, ``app.tcss``;
:mod:`.decode` (launch tokens -> lines and machine state), :mod:`.commands` (chat-input
commands), :mod:`.launcher` (cancellable launches on MLX threads), :mod:`.chat` (the chat
backend seam), :mod:`.cli_entry` (the ``tui`` subcommand).
"""


def __getattr__(name):  # lazy: importing the package does not import Textual
    if name == "DashboardApp":
        from qwengpu_mlx.tui.app import DashboardApp

        return DashboardApp
    raise AttributeError(name)
