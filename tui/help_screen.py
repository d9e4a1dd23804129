"""The `?` screen: every key of the screen below it, with what it does."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    """Lists key bindings; any of escape, q or ? closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 70; height: auto; max-height: 90%; border: thick $accent; background: $surface;
        padding: 0 1;
    }
    """
    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
        Binding("question_mark", "dismiss", "Close", show=False),
    ]

    def __init__(self, title: str, bindings: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.bindings = bindings

    def compose(self) -> ComposeResult:
        table = Table(title=self.title_text, expand=True, show_edge=False)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("does")
        for keys, description in self.bindings:
            table.add_row(keys, description)
        with VerticalScroll():
            yield Static(table, id="help-table")

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)


def describe(
    bindings: list[Binding | tuple[str, str] | tuple[str, str, str]],
) -> list[tuple[str, str]]:
    """(keys, description) rows for a BINDINGS list, keys of one action merged."""
    rows: dict[str, list[str]] = {}
    order: list[str] = []
    for item in bindings:
        b = item if isinstance(item, Binding) else Binding(*item)
        description = b.description or b.action
        if description not in rows:
            rows[description] = []
            order.append(description)
        for key in b.key.split(","):
            shown = b.key_display or _KEY_NAMES.get(key.strip(), key.strip())
            if shown not in rows[description]:
                rows[description].append(shown)
    return [(" / ".join(rows[d]), d) for d in order]


_KEY_NAMES = {
    "question_mark": "?",
    "space": "space",
    "slash": "/",
    "plus": "+",
    "minus": "-",
    "equals_sign": "=",
    "escape": "esc",
    "backspace": "backspace",
}
