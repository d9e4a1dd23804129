"""Text an agent wrote (or quoted in a grader's message), made safe for the TUI's widgets.

Rich and Textual pass control characters through to the terminal: an agent's escape
sequence in its action, its output, its transcript or a grader's failure message would set
the window title, move the cursor over a verdict, or clear the screen. Every widget takes
such text through `agent_text`: control characters shown, never obeyed
(`termgym._terminal_text.printable`), and never read as Rich markup.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from termgym._terminal_text import printable

__all__ = ["agent_text", "printable"]


def agent_text(value: Any, style: str = "", *, one_line: bool = False) -> Text:
    """`value` (an agent's text, or what quotes it) as a Rich Text that shows its control
    characters and reads no markup."""
    return Text(printable(str(value), one_line=one_line), style=style)
