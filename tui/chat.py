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

from dataclasses import fields
from typing import Iterator, Protocol, runtime_checkable

from qwengpu_mlx.chat.cli import open_model
from qwengpu_mlx.chat.session import ChatSession, ChatSettings, TextPiece
from qwengpu_mlx.chat.textgen import TextGenerator


@runtime_checkable
class ChatProgress(Protocol):
    """What a reply's ``launches`` sink may also hear (the dashboard's does: its status bar)."""

    def prefill(self, tokens: int) -> None:
        """The model is about to read ``tokens`` prompt tokens (those its cache lacks)."""

    def generated(self) -> None:
        """The model wrote one more token (raises ``LaunchCancelled`` to stop the reply)."""

    def note(self, text: str) -> None:
        """A slow step of the chat model (e.g. the prompt's shared start, prefilled once)."""


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
        self.session.text = ReportingText(self.session.text)

    @property
    def available(self) -> bool:
        return True

    def reply(self, text: str, launches=None) -> Iterator[object]:
        """The turn's events. A turn that does not end (cancelled, or failed) is left out of
        the conversation: the next question follows the last turn that did (its prompt then
        no longer extends the cached tokens, so the session prefills it afresh)."""
        kept = len(self.session.messages)
        finished = False
        progress = launches if isinstance(launches, ChatProgress) else None
        quiet_log, self.model.log = self.model.log, (progress.note if progress else self.model.log)
        self.session.text.reporting = progress
        try:
            yield from self.session.turn(text, launch_events=launches)
            finished = True
        finally:
            self.session.text.reporting, self.model.log = None, quiet_log
            if not finished:
                del self.session.messages[kept:]

    def reset(self) -> None:
        self.session.reset()


class ReportingText(TextGenerator):
    """The session's text generator, telling a :class:`ChatProgress` what it does: how many
    prompt tokens it prefills (a slow model spends minutes there) and each token it writes.
    The same model, cache and sampler as the generator it replaces. Its own name for the
    dashboard's sink (``reporting``): ``TextGenerator.progress`` is the prefill's
    ``(processed, total)`` callback, which stays the inner generator's."""

    def __init__(self, inner: TextGenerator):
        super().__init__(**{f.name: getattr(inner, f.name) for f in fields(TextGenerator)})  # all it holds
        self.reporting: ChatProgress | None = None

    def uncached(self, prompt: list[int]) -> int:
        """The prompt tokens ``generate`` will feed: those after the cached ones it extends,
        else after the shared prefix when the prompt starts with it (``TextGenerator._prefill``)."""
        n = len(self.fed)
        if self.cache is None or prompt[:n] != self.fed or n >= len(prompt):
            p = self.prefix
            n = len(p.tokens) if p is not None and len(prompt) > len(p.tokens) and \
                prompt[:len(p.tokens)] == p.tokens else 0
        return len(prompt) - n

    def generate(self, prompt: list[int], max_tokens: int, stats) -> Iterator[int]:
        progress = self.reporting
        if progress is not None:
            progress.prefill(self.uncached(prompt))
        tokens = super().generate(prompt, max_tokens, stats)
        try:
            for token in tokens:
                if progress is not None:
                    progress.generated()
                yield token
        finally:
            tokens.close()


def chat_backend(model: str | None, *, log=lambda s: None, settings: ChatSettings | None = None) -> ChatBackend:
    """The backend for ``--model`` (None: no chat). Opens the model now: a model that cannot be
    opened raises the CLI's error here, before the dashboard starts. ``settings``: the chat's
    flags, as ``chat`` takes them (default: the chat's defaults, launches checked)."""
    if model is None:
        return NoChat()
    # no machine named: the default machine's circuit where it fits the model, as `chat` chooses
    return SessionChat(open_model(model, None, log=log), settings or ChatSettings(check=True))
