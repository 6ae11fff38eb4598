"""``qwengpu-mlx chat``: the chat loop (``qwengpu_mlx.chat.cli``)."""

from __future__ import annotations

from qwengpu_mlx.chat.cli import run

__all__ = ["run"]
