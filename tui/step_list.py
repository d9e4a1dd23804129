"""The steps of an episode, one line each, drawn on demand."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from .agent_text import printable
from .line_view import LineView
from .messages import StepHighlighted
from .model import EpisodeModel

MODE_MARK = {"command": "$", "keys": "⌨", "submit": "✔", "tool": "⚙"}


class StepList(LineView):
    """One line per step: number, mode, exit code, duration, action; ⚑ marks audit hits.
    A step the agent's own log reports (run by the agent inside the step above it, not by
    termgym) is indented under it with ↳, its number and text dimmed."""

    DEFAULT_CSS = """
    StepList { width: 1fr; height: 1fr; border: round $primary 50%; overflow-x: hidden; }
    StepList:focus { border: round $accent; }
    """

    BINDINGS = [
        Binding("down", "cursor(1)", "Next step", show=False),
        Binding("up", "cursor(-1)", "Previous step", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("home", "jump(0)", "First step", show=False),
        Binding("end", "jump(-1)", "Last step", show=False),
    ]

    def __init__(self, model: EpisodeModel, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        self.audit_steps: set[int] = set()
        self.matches: set[int] = set()
        self.border_title = "steps"

    def on_mount(self) -> None:
        self.audit_steps = {k for k in self.model.audit_by_step() if k is not None}
        self.reload_lines()

    def line_count(self) -> int:
        return len(self.model)

    def line_text(self, index: int) -> Text:
        step = self.model.step(index)
        reported = step.source == "agent"
        text = Text()
        if reported:
            text.append(f"{'↳' + str(step.index):>5} ", style="dim cyan")
        else:
            text.append(f"{step.index:>5} ", style="dim")
        text.append(MODE_MARK.get(step.mode, "?") + " ", style="bold")
        if step.exit_code is None:
            code = "  ·"
            style = "dim"
        else:
            code = f"{step.exit_code:>3}"
            style = "green" if step.exit_code == 0 else "bold red"
        if step.timed_out:
            code, style = "  ⏱", "bold yellow"
        text.append(code + " ", style=style)
        if reported and not step.duration:
            text.append("      · ", style="dim")
        else:
            text.append(f"{step.duration:6.2f}s ", style="dim")
        flagged = not reported and step.index in self.audit_steps
        text.append("⚑ " if flagged else "  ", style="bold magenta")
        action = printable(step.action, one_line=True)
        style = "dim italic" if reported else ""
        text.append(action, style="reverse" if index in self.matches else style)
        return text

    def cursor_moved(self, index: int) -> None:
        self.post_message(StepHighlighted(index))

    def action_cursor(self, delta: int) -> None:
        self.cursor = self.cursor + delta

    def action_page(self, direction: int) -> None:
        self.cursor = self.cursor + direction * max(1, self.size.height - 1)

    def action_jump(self, where: int) -> None:
        self.cursor = where if where >= 0 else self.line_count() - 1
