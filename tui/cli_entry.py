"""The ``tui`` subcommand's ``run(ns)`` (its options: ``qwengpu_mlx/cli/parser.py``)."""

from __future__ import annotations

import sys

from qwengpu_mlx.chat.cli import settings_from
from qwengpu_mlx.tui.app import DashboardApp
from qwengpu_mlx.tui.chat import chat_backend


def run(ns) -> int:
    """Open the chat model first (a bad --model is the CLI's error, before any screen), then the app.
    The chat's flags (``--max-tokens``, ``--thinking``, ``--temp``, ...) make the same
    ``ChatSettings`` as ``chat``'s; launches are checked unless ``--no-check``."""
    model = getattr(ns, "model", None)
    chat = chat_backend(model, log=lambda text: print(f"[{text}]", file=sys.stderr, flush=True),
                        settings=settings_from(ns))
    app = DashboardApp(model=model, initial=getattr(ns, "run", None), check=getattr(ns, "check", True), chat=chat)
    app.run()
    return app.return_code or 0
