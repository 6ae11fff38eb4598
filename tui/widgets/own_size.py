"""Widgets whose size on the screen never follows their content.

Textual's ``virtual_size`` (the scrollable content's size) is a reactive that lays the
whole screen out again whenever it changes: every widget placed and redrawn, a fifth of
a second on a loaded machine. The transcript gains lines at each command and the input's
line changes at each key, yet their places on the screen are set by the layout (a share
of the pane, a fixed height), not by their content: only their scrollbars and scroll
range follow it. Here a change of the virtual size updates those and repaints the
widget, without a layout (as ``token_stream.TokenStream`` does for the launch pane); a
scrollbar that appears or goes still lays the screen out (Textual's own reactive).
"""

from __future__ import annotations

from textual.geometry import Size
from textual.reactive import Reactive


class OwnSize:
    """Mix in before the Textual widget class."""

    virtual_size = Reactive(Size(0, 0), layout=False)

    def watch_virtual_size(self, size: Size) -> None:
        self._scroll_update(size)
