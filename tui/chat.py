"""The chat seam: what the dashboard calls for plain (non-command) input.

A :class:`ChatBackend` turns the user's line into the chat loop's typed events
(``qwengpu_mlx.chat.session``: ``TextPiece``, ``ReasoningPiece``, ``ToolCallStarted``,
``ToolCallDone``, ``TurnSummary``), and hands every launch it makes to the ``launches`` sink (a runtime
``LaunchEvents``: the dashboard's launch and machine panes). The dashboard runs every
``reply`` on its one MLX thread (:class:`qwengpu_mlx.tui.launcher.MlxThread`, waited on by a
thread worker), so a backend may block and use MLX freely, and the arrays it keeps from one
reply to the next (the prompt cache) are used on the thread that made them. A reply the
dashboard stops early (escape) is closed there too.

:class:`SessionChat` is the real backend: a ``chat.session.ChatSession`` on the model
``--model`` names, opened before the app starts (a bad ``--model`` is an error at
start-up: :func:`chat_backend` raises). :class:`NoChat` answers when no model is given.
"""

from __future__ import annotations

from typing import Iterator, Protocol, runtime_checkable

from qwengpu_mlx.chat.cli import open_model
from qwengpu_mlx.chat.session import ChatSession, ChatSettings, TextPiece
from qwengpu_mlx.core.machine import DEFAULT_MACHINE


@runtime_checkable
class ChatBackend(Protocol):
    name: str  # shown in the status bar

    @property
    def available(self) -> bool:
        """True when replies come from a language model."""
        ...

    def reply(self, text: str, launches=None) -> Iterator[object]:
        """The chat loop's events for the user's ``text``; launches report to ``launches``."""
        ...

    def reset(self) -> None:
        """Forget the conversation."""
        ...


NEEDS_CHECKPOINT = ("Chat needs a Qwen3.5 chat model: start the dashboard with "
                    "`qwengpu-mlx tui --model REPO_OR_DIR` (or `--model demo`, a toy model shipped with the "
                    "package). The embedded circuit runs launches without one: try /run dot, /kernels or /help.")


class NoChat:
    """No language model loaded: explains what chat needs."""

    name = "none"

    @property
    def available(self) -> bool:
        return False

    def reply(self, text: str, launches=None) -> Iterator[object]:
        yield TextPiece(NEEDS_CHECKPOINT)

    def reset(self) -> None:
        pass


class SessionChat:
    """The chat loop on a combined model (``chat.models.ChatModel``)."""

    def __init__(self, model, settings=None):
        self.model = model
        self.name = model.name
        self.session = ChatSession(model, settings or ChatSettings(check=True))

    @property
    def available(self) -> bool:
        return True

    def reply(self, text: str, launches=None) -> Iterator[object]:
        """The turn's events. A turn that does not end (cancelled, or failed) is left out of
        the conversation: the next question follows the last turn that did (its prompt then
        no longer extends the cached tokens, so the session prefills it afresh)."""
        kept = len(self.session.messages)
        finished = False
        try:
            yield from self.session.turn(text, launch_events=launches)
            finished = True
        finally:
            if not finished:
                del self.session.messages[kept:]

    def reset(self) -> None:
        self.session.reset()


def chat_backend(model: str | None, *, log=lambda s: None, thinking: bool | None = None) -> ChatBackend:
    """The backend for ``--model`` (None: no chat). Opens the model now: a model that cannot be
    opened raises the CLI's error here, before the dashboard starts. ``thinking``: the
    template's ``enable_thinking`` (None: its own default)."""
    if model is None:
        return NoChat()
    return SessionChat(open_model(model, DEFAULT_MACHINE, log=log), ChatSettings(check=True, thinking=thinking))
