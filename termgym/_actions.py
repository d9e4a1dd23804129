"""The actions every layer shares: SUBMIT, REPORT_CONFLICT, and typing a command in keys mode.

Agents produce them, the env and the chat adapters read them; defined here, below both.
"""

from __future__ import annotations

SUBMIT = "<submit>"
"""The action that ends the episode and has it graded (command and keys mode alike)."""

REPORT_CONFLICT = "<report-conflict>"
"""The action that ends the episode saying the task cannot be done as stated: the text after
it is the reason (`report_conflict(reason)`). The final state is graded all the same; the
report is recorded, and counted by the conflict-report rates (docs/metrics.md)."""


def report_conflict(reason: str) -> str:
    """The action reporting that the task contradicts itself, for `reason`."""
    return f"{REPORT_CONFLICT} {reason.strip()}".rstrip()


def conflict_reason(action: str) -> str | None:
    """The reason of a REPORT_CONFLICT action ("" when it gives none); None for any other."""
    text = action.strip()
    if not text.startswith(REPORT_CONFLICT):
        return None
    return text[len(REPORT_CONFLICT) :].strip()


def ends_episode(action: str) -> bool:
    """SUBMIT or REPORT_CONFLICT: the actions that end an episode instead of running."""
    return action.strip() == SUBMIT or conflict_reason(action) is not None


def as_keystrokes(command: str) -> str:
    """The keys-mode notation that types `command` and presses Enter."""
    return command.replace("<", "<lt>").replace("\n", "<Enter>") + "<Enter>"
