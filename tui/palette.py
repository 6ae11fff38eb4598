"""The command palette's (ctrl+p) dashboard commands: a Textual :class:`Provider`.

Opened empty, the palette lists the app's actions (pick a kernel, rerun, cancel,
clear, help, check on/off); typed into, it also finds "run NAME" for every example
kernel. Each command calls the main screen's own action, as its key or chat command does.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Iterator

from textual.command import DiscoveryHit, Hit, Hits, Provider

from qwengpu_mlx.tui import commands


class DashboardCommands(Provider):
    def _main(self):
        return self.app.main  # DashboardApp's main screen, also when the palette opens over a modal

    def _actions(self) -> Iterator[tuple[str, str, Callable[[], object]]]:
        """(title, help, callback) for the actions available now."""
        main = self._main()
        yield "Run a kernel…", "pick an example kernel and run it (/kernels)", main.list_kernels
        if main.last_request is not None and not main.running:
            yield "Rerun the last launch", f"/run {main.last_request.describe()} (ctrl+r)", main.action_rerun
        if main.running:
            yield "Cancel the launch", "stop at the next token (escape)", main.action_cancel
        yield "Clear the panes", "chat, launch and machine (ctrl+l)", main.action_clear
        yield "Help", "commands and keys (/help)", partial(main.submit, "/help")
        flip = "off" if main.check else "on"
        yield (f"Check: turn {flip}", "replay each launch against the reference interpreter (/check)",
               partial(main.submit, f"/check {flip}"))

    def _kernels(self) -> Iterator[tuple[str, str, Callable[[], object]]]:
        main = self._main()
        for name, desc in commands.list_kernels(commands.examples_dir(main.kernels_dir)):
            stem = name.removesuffix(".cu")
            yield f"Run {stem}", desc or f"/run {stem}", partial(main.submit, f"/run {stem}")

    async def discover(self) -> Hits:
        for title, help, callback in self._actions():
            yield DiscoveryHit(title, callback, help=help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help, callback in [*self._actions(), *self._kernels()]:
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, text=title, help=help)
