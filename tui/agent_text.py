"""Text an agent wrote (or quoted in a grader's message), made safe for the TUI's widgets.

Rich and Textual pass control characters through to the terminal: an agent's escape
sequence in its action, its output, its transcript or a grader's failure message would set
the window title, move the cursor over a verdict, or clear the screen. Every widget takes
such text through `agent_text`: control characters shown, never obeyed
(`termgym._terminal_text.printable`), and never read as Rich markup.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.text import Text

from termgym._terminal_text import printable
from termgym.recording import EpisodeHeader

__all__ = ["agent_text", "printable", "shown_header"]


def agent_text(value: Any, style: str = "", *, one_line: bool = False) -> Text:
    """`value` (an agent's text, or what quotes it) as a Rich Text that shows its control
    characters and reads no markup."""
    return Text(printable(str(value), one_line=one_line), style=style)


def _one_line(value: Any) -> Any:
    return printable(value, one_line=True) if isinstance(value, str) else value


def shown_header(header: EpisodeHeader | None) -> EpisodeHeader | None:
    """An episode's header as the TUI shows it: every name a file gave it (episode, task,
    variant, agent, backend, run, rule names and values, versions) with its control
    characters shown. The panes read the header through the models only, so no pane
    prints a field of it unshown."""
    if header is None:
        return None

    def rules(values: Any) -> dict[str, Any]:
        return {_one_line(str(k)): _one_line(v) for k, v in dict(values).items()}

    return dataclasses.replace(
        header,
        episode_id=_one_line(header.episode_id), task=_one_line(header.task),
        variant=_one_line(header.variant), agent=_one_line(header.agent),
        backend=_one_line(header.backend), run_id=_one_line(header.run_id),
        rules_visible=rules(header.rules_visible), rules_enforced=rules(header.rules_enforced),
        versions={_one_line(str(k)): _one_line(str(v)) for k, v in dict(header.versions).items()},
    )  # fmt: skip
