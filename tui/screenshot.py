"""Save an SVG screenshot of the dashboard after a finished launch, or after a chat turn.

``python -m qwengpu_mlx.tui.screenshot [OUT.svg] [--run COMMAND] [--size 160x48]``
(default: the dot product, into docs/dashboard.svg). Runs headless on the embedded circuit.
``--model demo --chat "What is [3, 1, 2] @ [4, 5, 6]?"`` asks the chat model instead
(docs/dashboard-chat.svg).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from qwengpu_mlx.tui.app import DashboardApp
from qwengpu_mlx.tui.chat import chat_backend
from qwengpu_mlx.tui.commands import REPO_ROOT

DOT = "/run examples/kernels/dot.cu a=1,2,3 b=4,5,6 out=0 n=3"


async def screenshot(out: Path, command: str = DOT, size: tuple[int, int] = (160, 48), timeout: float = 300.0,
                     show_timing: bool = True, chat=None) -> Path:
    """The dashboard after ``command`` (a /run, or with ``chat``, a chat backend, any chat line)."""
    app = DashboardApp(show_timing=show_timing, chat=chat)
    async with app.run_test(size=size) as pilot:
        screen = app.main
        screen.query_one("#prompt").cursor_blink = False
        screen.query_one("#prompt").value = command
        await pilot.press("enter")
        t0 = time.monotonic()
        await pilot.pause(0.5)
        while (screen.last_outcome is None and chat is None) or screen.running:
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"the launch did not finish in {timeout:.0f} s")
            await pilot.pause(0.2)
        await pilot.pause()
        out.parent.mkdir(parents=True, exist_ok=True)
        app.save_screenshot(filename=out.name, path=str(out.parent))
        status = screen.last_outcome.status if screen.last_outcome is not None else "done"
    if status != "done":
        raise RuntimeError(f"the launch ended {status}: {screen.last_outcome.error}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", nargs="?", default=str(REPO_ROOT / "docs" / "dashboard.svg"))
    p.add_argument("--run", default=DOT)
    p.add_argument("--size", default="160x48")
    p.add_argument("--no-timing", action="store_true", help="hide tokens/s and durations")
    p.add_argument("--model", help="a chat model (as `chat --model` takes it) for --chat")
    p.add_argument("--chat", help="ask the chat model this instead of running --run")
    ns = p.parse_args(argv)
    w, h = (int(x) for x in ns.size.lower().split("x"))
    chat = None
    if ns.chat:
        chat = chat_backend(ns.model or "demo", log=print)
    path = asyncio.run(screenshot(Path(ns.out), ns.chat or ns.run, (w, h), show_timing=not ns.no_timing,
                                  chat=chat))
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
