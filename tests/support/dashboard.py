"""Driving the dashboard through Textual's Pilot: its terminal size, typing a line, waiting."""

from __future__ import annotations

import time

SIZE = (160, 48)
LAUNCH_TIMEOUT = 120.0


async def type_command(pilot, text: str) -> None:
    """Type a line into the chat input, key by key, and press enter."""
    await pilot.click("#prompt")
    await pilot.press(*[("space" if c == " " else c) for c in text])
    await pilot.press("enter")


async def enter_line(pilot, text: str) -> None:
    """Put a line into the chat input at once and press enter (typing costs some 0.1 s a key)."""
    prompt = pilot.app.screen.query_one("#prompt")
    prompt.focus()
    prompt.value = text
    prompt.cursor_position = len(text)
    await pilot.press("enter")


async def wait_until(pilot, cond, timeout: float = LAUNCH_TIMEOUT, what: str = "condition") -> None:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await pilot.pause(0.2)


def screen_lines(log) -> list[str]:
    """The lines a RichLog (the transcript) shows, as plain text (wrapped as on the screen)."""
    return [strip.text.rstrip() for strip in log.lines]
