"""The chat seam: what the dashboard calls for plain (non-command) input.

A :class:`ChatBackend` turns the conversation so far into a reply, streamed as text
pieces. The dashboard runs ``reply`` in a thread worker (on a fresh thread that ends
with ``mx.clear_streams()``, see :mod:`qwengpu_mlx.tui.launcher`), so a backend may
block and use MLX freely. :func:`chat_backend` picks the implementation from the
``--model`` option; the Qwen3.5-checkpoint backend arrives in a later issue and
plugs in there. Until then :class:`NoChat` answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol, runtime_checkable


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "user" | "assistant"
    text: str


@runtime_checkable
class ChatBackend(Protocol):
    name: str  # shown in the status bar

    @property
    def available(self) -> bool:
        """True when replies come from a language model."""
        ...

    def reply(self, history: list[ChatMessage]) -> Iterator[str]:
        """Stream the assistant's answer to ``history`` (its last message is the user's)."""
        ...


NEEDS_CHECKPOINT = ("Chat needs a Qwen3.5 checkpoint: start the dashboard with "
                    "`qwengpu-mlx tui --model DIR|REPO` (chat arrives in a later issue). "
                    "The embedded circuit runs launches without one: try /run dot, /kernels or /help.")


class NoChat:
    """No language model loaded: explains what chat needs."""

    def __init__(self, model: str | None = None):
        self.model = model
        self.name = "none"

    @property
    def available(self) -> bool:
        return False

    def reply(self, history: list[ChatMessage]) -> Iterator[str]:
        if self.model is None:
            yield NEEDS_CHECKPOINT
        else:
            yield (f"Chat with the checkpoint `{self.model}` is not wired into the dashboard yet "
                   "(it arrives in a later issue). Launches run on the embedded circuit: /run, /kernels, /help.")


def chat_backend(model: str | None) -> ChatBackend:
    """The backend for ``--model`` (None: no checkpoint). The checkpoint backend plugs in here."""
    return NoChat(model)
