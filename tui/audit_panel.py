"""Every audit hit of the episode, each with the step it happened at."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from .agent_text import agent_text


class AuditPanel(Static):
    """Leaked rules, platform mentions and other audit hits, by step."""

    DEFAULT_CSS = """
    AuditPanel { height: auto; padding: 0 1; }
    """

    def show(self, by_step: dict[int | None, list[dict[str, Any]]]) -> None:
        """Draw the hits (grouped by step index; None for hits not tied to a step)."""
        if not by_step:
            self.update(Text("audit: no hits", style="dim"))
            return
        table = Table(title="audit hits", title_justify="left")
        table.add_column("step")
        table.add_column("kind", style="bold magenta")
        table.add_column("message")
        keys = sorted(k for k in by_step if k is not None) + ([None] if None in by_step else [])
        for step in keys:
            for hit in by_step[step]:
                where = "—" if step is None else str(step)
                kind, message = hit.get("kind", "?"), hit.get("message", "")
                table.add_row(where, agent_text(kind), agent_text(message))
        self.update(table)
