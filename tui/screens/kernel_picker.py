"""``/kernels``: the example kernels in a filterable Textual ``OptionList``; enter runs one.

A modal over the dashboard (the chat pane is too narrow for 78 descriptions). It
dismisses with the chosen kernel's name (the main screen runs ``/run NAME``, the
kernel's .json arguments) or ``None`` on escape.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option


class KernelPicker(ModalScreen[str | None]):
    """``kernels``: (file name, description) pairs, as ``commands.list_kernels`` gives them."""

    BINDINGS = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("down", "move(1)", show=False),
        Binding("up", "move(-1)", show=False),
    ]
    DEFAULT_CSS = """
    KernelPicker { align: center middle; }
    KernelPicker > #picker {
        width: 90%; height: 85%;
        border: round $accent; border-title-color: $accent; border-title-style: bold;
        background: $surface;
    }
    KernelPicker #kernel-list { height: 1fr; }
    KernelPicker .hint { color: $text-muted; padding: 0 1; }
    """

    def __init__(self, kernels: list[tuple[str, str]], folder: str = ""):
        super().__init__()
        self.kernels = kernels
        self.folder = folder

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Input(placeholder="type to filter by name or description", id="kernel-filter")
            yield OptionList(*self._options(""), id="kernel-list")
            yield Static("enter runs the highlighted kernel with its .json arguments · up/down move · "
                         "escape closes", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#picker").border_title = f"{len(self.kernels)} kernels in {self.folder}".strip()
        self.option_list.highlighted = 0 if self.kernels else None
        self.query_one("#kernel-filter", Input).focus()

    @property
    def option_list(self) -> OptionList:
        return self.query_one("#kernel-list", OptionList)

    def _options(self, text: str) -> list[Option]:
        words = text.casefold().split()
        out = []
        for name, desc in self.kernels:
            if all(w in f"{name} {desc}".casefold() for w in words):
                prompt = Text.assemble((name.removesuffix(".cu"), "bold"), "  ", (desc, "dim"))
                out.append(Option(prompt, id=name.removesuffix(".cu")))
        return out

    @on(Input.Changed, "#kernel-filter")
    def _filter(self, event: Input.Changed) -> None:
        options = self._options(event.value)
        self.option_list.set_options(options)
        self.option_list.highlighted = 0 if options else None

    def action_move(self, delta: int) -> None:
        """up/down in the filter move the highlight in the list."""
        ol = self.option_list
        if ol.option_count:
            ol.highlighted = max(0, min(ol.option_count - 1, (ol.highlighted or 0) + delta))

    @on(Input.Submitted, "#kernel-filter")
    def _submit_filter(self, event: Input.Submitted) -> None:
        option = self.option_list.highlighted_option
        if option is not None:
            self.dismiss(option.id)

    @on(OptionList.OptionSelected, "#kernel-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
