"""What one step was: its action, mode, exit code, timing, and the audit hits at it."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.widgets import Static

from termgym.env import typed_text
from termgym.recording import StepRecord

from .agent_text import agent_text

REPORTED = (
    "the agent's own log says it ran this inside that step; termgym did not run or see it: "
    "shown for reading, never graded or audited"
)
SAID = 400
"""Characters of the agent's message shown with a step (the transcript pane has it whole)."""


class StepDetail(Static):
    """The selected step's facts, above its output."""

    DEFAULT_CSS = """
    StepDetail { height: auto; max-height: 14; border: round $primary 50%; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.border_title = "step"
        self.plain = ""

    def show(
        self,
        step: StepRecord,
        position: int,
        total: int,
        hits: list[dict[str, Any]],
        said: list[dict[str, Any]] | None = None,
    ) -> None:
        """Show `step` (number `position` of `total` in the list), what the agent wrote that
        led to it (`said`: its transcript entries) and its audit hits."""
        facts = Text()
        if step.source == "agent":
            facts.append(f"reported step {step.index}, inside step {step.within}", style="bold")
        else:
            facts.append(f"step {step.index}", style="bold")
        facts.append(f" ({position + 1} of {total})", style="dim")
        facts.append(f"  {step.mode}  ")
        if step.exit_code is None:
            facts.append("exit -", style="dim")
        else:
            facts.append(
                f"exit {step.exit_code}", style="bold green" if step.exit_code == 0 else "bold red"
            )
        facts.append(f"  {step.duration:.3f}s  at t={step.t:.2f}s")
        for flag, label in (
            (step.timed_out, "TIMED OUT"),
            (step.truncated, "TRUNCATED"),
            (step.restarted, "SHELL RESTARTED"),
        ):
            if flag:
                facts.append(f"  {label}", style="bold yellow")
        action = Text("$ " if step.mode == "command" else "> ", style="bold cyan")
        action.append(agent_text(step.action.rstrip("\n") or "(empty)"))
        parts: list[Text] = [facts, action]
        if step.source == "agent":
            parts.insert(1, Text(REPORTED, style="italic yellow"))
        if step.mode == "keys" and step.action:
            typed = Text("typed: ", style="bold cyan")
            typed.append(typed_text(step.action) or "(nothing printable)")
            parts.append(typed)
        for entry in said or []:
            for key, label in (("reasoning", "thinking"), ("content", str(entry.get("role")))):
                value = str(entry.get(key) or "").strip()
                if value:
                    line = Text(f"{label}: ", style="bold green" if key == "content" else "dim")
                    cut = value[:SAID] + ("…" if len(value) > SAID else "")
                    line.append(
                        agent_text(cut, "" if key == "content" else "dim italic", one_line=True)
                    )
                    parts.append(line)
        for hit in hits:
            line = Text("⚑ audit ", style="bold magenta")
            line.append(agent_text(f"{hit.get('kind', '?')}: ", "bold"))
            line.append(agent_text(hit.get("message", "")))
            parts.append(line)
        self.plain = "\n".join(part.plain for part in parts)
        self.update(Group(*parts))
