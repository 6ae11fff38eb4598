"""A widget's styled rows reused when their content is the same, wherever they now stand.

Textual styles each row a widget renders (its padding, background, filters) in a cache
keyed by the row's place, and a repaint of the widget empties it. A pane that scrolls
(the transcript gaining a line, the launch pane its tokens, their scrollbars' thumbs)
repaints every row, though all but the new ones show content it already styled one row
higher: each was styled again, and each new row object then cut again for the screen's
columns (Textual caches that cut on the row object). Here a row whose content and style
inputs equal a row styled before is that same object: the frame that draws a launch's
outcome styled some 130 rows, of which some 100 had been styled the frame before.

Only rows that are plain content (no top or bottom border or padding, where the row's
place picks what is drawn) are reused; any other row, and any Textual whose row styling
takes other arguments than these, is styled as before.
"""

from __future__ import annotations

import inspect

from textual._styles_cache import StylesCache

_ARGS = ["styles", "y", "size", "content_size", "padding", "base_background", "background", "render_content_line"]
_SUPPORTED = list(inspect.signature(StylesCache.render_line).parameters)[1:len(_ARGS) + 1] == _ARGS
ROWS_PER_LINE = 4  # the memo is emptied when it holds this many rows per row of the widget


class RowMemo(StylesCache):
    """``StylesCache`` whose plain rows are memoized by their content (``Strip`` segments)."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict = {}
        self._styles_key: tuple | None = None  # the styles' part of a row's key, read once a render (None: not plain)

    def render(self, styles, *args, **kwargs):
        gutter = styles.gutter
        plain = _SUPPORTED and not (gutter.top or gutter.bottom)
        self._styles_key = (styles.border, styles.outline, styles.tint, styles.text_opacity) if plain else None
        try:
            return super().render(styles, *args, **kwargs)
        finally:
            self._styles_key = None

    def render_line(self, styles, y, size, content_size, padding, base_background, background,
                    render_content_line, *rest):
        styles_key = self._styles_key
        if styles_key is None or padding.top or padding.bottom or y >= content_size.height:
            return super().render_line(styles, y, size, content_size, padding, base_background, background,
                                       render_content_line, *rest)
        content = render_content_line(y)
        try:
            key = (tuple(content), content.cell_length, size, content_size, padding, base_background,
                   background, styles_key, *rest)
            row = self._rows.get(key)
        except TypeError:  # an argument that cannot be a key: styled as before
            key = row = None
        if row is None:
            row = super().render_line(styles, y, size, content_size, padding, base_background, background,
                                      lambda _y: content, *rest)
            if key is not None:
                if len(self._rows) >= ROWS_PER_LINE * max(size.height, 1):
                    self._rows.clear()
                self._rows[key] = row
        return row


def memo_rows(widget):
    """``widget`` with its rows memoized (:class:`RowMemo`); returns it."""
    widget._styles_cache = RowMemo()
    return widget
