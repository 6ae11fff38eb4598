"""Drive the dashboard headless through lines as a user types them, and print its screen as text.

``python -m qwengpu_mlx.tui.screen_text [--model demo] [--size 160x48] LINE [LINE ...]``

Each LINE is typed into the input and entered (a question for the chat model, or a
command: ``/run dot``); the screen is printed once its job has ended. A line written
``esc:LINE`` is entered, and escape is pressed as soon as the screen shows the job's first
launch (a chat turn's tool call, or a /run), as a user stops a job under way. What is
printed is the screen as a terminal shows it, without colours: for bug reports and for
reading a session back (the tests assert on the same screen).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import sys
import time

from rich.console import Console

from qwengpu_mlx.core.errors import QwenGpuError
from qwengpu_mlx.tui.app import DashboardApp
from qwengpu_mlx.tui.chat import NoChat, chat_backend

CANCEL = "esc:"
POLL_S = 0.01  # how often a job's progress is looked at (an esc: line's cancel lands at its first launch)


def screen_text(app) -> str:
    """The screen as plain text, each row as wide as the terminal, trailing blanks cut."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=False, color_system=None,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True))  # as App.export_screenshot renders it
    return "\n".join(row.rstrip() for row in console.export_text(styles=False).splitlines())


async def _until(pilot, done, timeout: float, what: str) -> None:
    t0 = time.monotonic()
    while not done():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"{what}: nothing after {timeout:.0f} s")
        await pilot.pause(POLL_S)


async def enter(pilot, line: str, timeout: float) -> None:
    """Enter ``line``, wait until its job ends (cancelled once its first launch is on the
    screen when it starts with ``esc:``)."""
    screen = pilot.app.main
    cancel = line.startswith(CANCEL)
    text = line.removeprefix(CANCEL).strip() if cancel else line
    decoder = screen.decoder
    prompt = screen.prompt
    prompt.focus()
    prompt.value = text
    prompt.cursor_position = len(text)
    await pilot.press("enter")
    if cancel:
        await _until(pilot, lambda: not screen.running or screen.decoder not in (None, decoder),
                     timeout, f"the first launch of {text!r}")
        if screen.running:
            await pilot.press("escape")
    await _until(pilot, lambda: not screen.running, timeout, f"the end of {text!r}")
    await pilot.pause(0.2)  # the frame that draws the end


async def session(lines: list[str], chat, size: tuple[int, int], show_timing: bool, timeout: float, out) -> None:
    app = DashboardApp(chat=chat, show_timing=show_timing)
    async with app.run_test(size=size) as pilot:
        app.main.prompt.cursor_blink = False
        for line in lines:
            await enter(pilot, line, timeout)
            print(f"=== after: {line}", file=out)
            print(screen_text(app), file=out, flush=True)


def terminal_size(text: str) -> tuple[int, int]:
    """``COLUMNSxROWS`` as argparse reads it: a bad one is a usage error, not a traceback."""
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not COLUMNSxROWS (e.g. 160x48)") from None
    if w < 1 or h < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: columns and rows are counts of at least 1")
    return w, h


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("lines", nargs="+", help=f"lines to enter, in order ({CANCEL}LINE: cancel it once its first launch shows)")
    p.add_argument("--model", help="a chat model as `chat --model` takes it (demo: the toy shipped); none: commands only")
    p.add_argument("--size", type=terminal_size, default="160x48", help="the terminal, COLUMNSxROWS (default 160x48)")
    p.add_argument("--no-timing", action="store_true", help="hide tokens/s and durations")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a line's job may take (default 300)")
    ns = p.parse_args(argv)
    try:
        chat = chat_backend(ns.model, log=lambda s: print(f"[{s}]", file=sys.stderr)) if ns.model else NoChat()
        asyncio.run(session(ns.lines, chat, ns.size, not ns.no_timing, ns.timeout, sys.stdout))
    except QwenGpuError as e:  # a --model that cannot be opened
        print(f"error: {e}", file=sys.stderr)
        return 2
    except TimeoutError as e:  # a line's job outlived --timeout
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
