"""The ``tui`` subcommand: ``add_parser(subparsers)`` and ``run(ns)`` for qwengpu_mlx/cli/main.py."""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("tui", help="open the dashboard (chat, live launch tokens, machine state)",
                              description="The Textual dashboard: runs launches on the embedded circuit "
                                          "(no download) and streams the tokens the model writes.")
    p.add_argument("--model", metavar="REPO_OR_DIR", default=None,
                   help="a chat model, as chat --model takes it (a Qwen3.5 repo or directory, a combined "
                        "checkpoint, or demo); optional: launches need none")
    p.add_argument("--run", metavar="COMMAND", default=None,
                   help="a command to run at start, e.g. \"/run examples/kernels/dot.cu a=1,2,3 b=4,5,6 out=0 n=3\" "
                        "(the leading /run may be left out)")
    p.add_argument("--thinking", action=argparse.BooleanOptionalAction, default=None,
                   help="chat: pass enable_thinking=true (or false) to the chat template; default: the template's own")
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="start with /check off (no replay against the reference interpreter)")
    p.set_defaults(check=True)
    return p


def run(ns) -> int:
    """Open the chat model first (a bad --model is the CLI's error, before any screen), then the app."""
    import sys

    from qwengpu_mlx.tui.app import DashboardApp
    from qwengpu_mlx.tui.chat import chat_backend

    model = getattr(ns, "model", None)
    chat = chat_backend(model, log=lambda text: print(f"[{text}]", file=sys.stderr, flush=True),
                        thinking=getattr(ns, "thinking", None))
    app = DashboardApp(model=model, initial=getattr(ns, "run", None), check=getattr(ns, "check", True), chat=chat)
    app.run()
    return app.return_code or 0
