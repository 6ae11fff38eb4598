"""Dashboard screens."""

from .main import MainScreen

__all__ = ["MainScreen"]
