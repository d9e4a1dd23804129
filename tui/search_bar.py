"""The input line for searching steps (episode view) or filtering episodes (run view)."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input


class SearchBar(Input):
    """A one-line input docked at the bottom; hidden until asked for. Escape hides it."""

    DEFAULT_CSS = """
    SearchBar { dock: bottom; display: none; border: tall $accent; }
    SearchBar.-shown { display: block; }
    """
    BINDINGS = [Binding("escape", "close", "Close search", show=False)]

    def open(self, placeholder: str) -> None:
        """Show the bar, focused, with a hint."""
        self.placeholder = placeholder
        self.add_class("-shown")
        self.focus()

    def action_close(self) -> None:
        self.remove_class("-shown")
        if self.screen.focused is self:
            self.screen.focus_next()
