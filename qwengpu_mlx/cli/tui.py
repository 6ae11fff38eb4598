"""``qwengpu-mlx tui``: the Textual dashboard (``qwengpu_mlx.tui.cli_entry``)."""

from __future__ import annotations

from qwengpu_mlx.tui.cli_entry import run

__all__ = ["run"]
