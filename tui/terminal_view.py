"""The terminal screen after a step, colours kept, as the agent's terminal showed it."""

from __future__ import annotations

from functools import lru_cache

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from termgym.screen import StyledRun


@lru_cache(maxsize=64)
def _colour(name: str) -> str | None:
    if name == "default":
        return None
    if len(name) == 6 and all(c in "0123456789abcdefABCDEF" for c in name):
        return f"#{name}"
    bright = name.startswith("bright")
    base = name[6:] if bright else name
    base = "yellow" if base == "brown" else base
    return f"bright_{base}" if bright else base


@lru_cache(maxsize=1024)
def run_style(
    fg: str,
    bg: str,
    bold: bool,
    italics: bool,
    underscore: bool,
    strikethrough: bool,
    reverse: bool,
    blink: bool,
) -> Style:
    """The rich Style of a pyte cell style."""
    return Style(
        color=_colour(fg),
        bgcolor=_colour(bg),
        bold=bold or None,
        italic=italics or None,
        underline=underscore or None,
        strike=strikethrough or None,
        reverse=reverse or None,
        blink=blink or None,
    )


def styled_text(rows: list[list[StyledRun]]) -> Text:
    """All rows as one rich Text with the cells' colours."""
    text = Text(no_wrap=True, overflow="crop")
    for y, runs in enumerate(rows):
        if y:
            text.append("\n")
        for run in runs:
            text.append(
                run.text,
                run_style(
                    run.fg,
                    run.bg,
                    run.bold,
                    run.italics,
                    run.underscore,
                    run.strikethrough,
                    run.reverse,
                    run.blink,
                ),
            )
    return text


class TerminalView(Static):
    """Shows a screen: coloured rows from the replayed cast, or the recorded plain text."""

    DEFAULT_CSS = """
    TerminalView {
        width: auto; height: auto; min-width: 40;
        border: round $primary 50%; background: black; color: white;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.border_title = "screen"
        self.plain = ""

    def show_plain(self, text: str, note: str = "") -> None:
        """Show the recorded screen text (no colours) while or instead of replaying."""
        self.plain = text
        self.border_subtitle = note
        self.update(Text(text, no_wrap=True, overflow="crop"))

    def show_styled(self, rows: list[list[StyledRun]]) -> None:
        """Show a replayed screen with its colours."""
        self.plain = "\n".join("".join(r.text for r in runs) for runs in rows).rstrip("\n")
        self.border_subtitle = ""
        self.update(styled_text(rows))
