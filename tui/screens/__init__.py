"""Dashboard screens."""

from qwengpu_mlx.tui.screens.main import MainScreen

__all__ = ["MainScreen"]
