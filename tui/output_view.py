"""A step's output, drawn line by line so a megabyte of output scrolls smoothly."""

from __future__ import annotations

from rich.text import Text

from .agent_text import agent_text
from .line_view import LineView


class OutputView(LineView):
    """Shows one step's output; the search term, when set, is highlighted."""

    DEFAULT_CSS = """
    OutputView { height: 1fr; border: round $primary 50%; }
    OutputView:focus { border: round $accent; }
    """
    cursor_enabled = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: list[str] = []
        self._widest = 0
        self.highlight = ""
        self.border_title = "output"

    def show(self, output: str, highlight: str = "") -> None:
        """Replace the content."""
        self._lines = output.split("\n")
        if self._lines and self._lines[-1] == "":
            self._lines.pop()
        self._widest = max((len(line) for line in self._lines[:5000]), default=0)
        self.highlight = highlight
        self.scroll_to(0, 0, animate=False)
        self.reload_lines()

    def line_count(self) -> int:
        return len(self._lines)

    def line_width(self) -> int:
        return self._widest

    def line_text(self, index: int) -> Text:
        text = agent_text(self._lines[index].replace("\t", "    "))
        if self.highlight:
            text.highlight_words([self.highlight], style="black on yellow", case_sensitive=False)
        return text
