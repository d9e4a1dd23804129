"""The model's side of an episode: its messages and reasoning, and the probe, by step."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.widgets import Static

from .agent_text import agent_text

ROLE_STYLE = {
    "system": "dim",
    "user": "cyan",
    "tool": "cyan",
    "assistant": "bold green",
    "probe_question": "bold yellow",
    "probe_prefill": "yellow",
    "probe": "bold yellow",
}
LIMIT = 1500
"""Characters of one entry shown (the rest is elided, said so)."""


def _clip(text: str) -> str:
    if len(text) <= LIMIT:
        return text
    return text[:LIMIT] + f" … [{len(text) - LIMIT} more characters]"


def entry_text(entry: dict[str, Any], current: bool = False) -> Text:
    """One transcript entry: its step and role, its reasoning (dim) and its content."""
    role = str(entry.get("role", "?"))
    text = Text()
    text.append("▶ " if current else "  ", style="bold magenta")
    text.append(f"step {entry.get('step', 0)} ", style="dim")
    text.append(agent_text(role, ROLE_STYLE.get(role, "bold")))
    if entry.get("probe_mode"):
        text.append(agent_text(f" ({entry['probe_mode']})", "dim"))
    reasoning = entry.get("reasoning")
    if reasoning:
        text.append("\n    thinking: ", style="italic dim")
        text.append(agent_text(_clip(str(reasoning)).replace("\n", "\n    "), "italic dim"))
    content = str(entry.get("content") or "")
    if content:
        text.append(agent_text("\n    " + _clip(content).replace("\n", "\n    ")))
    if entry.get("error"):
        text.append(agent_text(f"\n    error: {entry['error']}", "bold red"))
    return text


class TranscriptPanel(Static):
    """Every transcript entry in order; the entries that led to the selected step marked."""

    DEFAULT_CSS = """
    TranscriptPanel { height: auto; padding: 0 1; }
    """

    def show(self, entries: list[dict[str, Any]], step: int | None = None) -> None:
        """Draw `entries`, marking those of action `step + 1` (the selected step, 0-based)."""
        if not entries:
            self.update(
                Text("transcript: none (the agent wrote nothing besides its actions)", style="dim")
            )
            return
        lines: list[Text] = [Text(f"transcript: {len(entries)} entries", style="bold")]
        for entry in entries:
            mine = step is not None and int(entry.get("step") or 0) == step + 1
            lines.append(entry_text(entry, current=mine and entry.get("role") != "user"))
        self.update(Group(*lines))
