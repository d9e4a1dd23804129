"""Episodes whose recordings prove no run here wrote them: listed apart, counted nowhere.

An episode imported from ATIF (another producer's, or termgym's own export edited to claim
a pass), a recording copied from another machine, or one changed since it was written
(`EpisodeSummary.unverified`, termgym/recording/_signing.py) claims a verdict that no
verifier of this machine gave. `load_run` keeps such episodes out of every figure; the
report, the HTML file and the gate show what they claim here, as unverified.
"""

from __future__ import annotations

from html import escape

from rich.table import Table

from termgym._terminal_text import printable, shown
from termgym.analysis.metrics import EpisodeSummary
from termgym.report._load import RunData

TITLE = "Unverified episodes (counted in no figure)"
COLUMNS = ("episode", "agent", "task", "variant", "claimed class", "claimed reward", "why")


def unverified_caption(run: RunData) -> str:
    """One line: how many episodes are unverified, and that no figure counts them ("" when
    none is)."""
    if not run.unverified:
        return ""
    return (
        f"{len(run.unverified)} episodes are unverified (imported, or their recordings prove "
        "no run on this machine wrote them unchanged): no figure of this report counts them"
    )


def _cells(s: EpisodeSummary) -> tuple[str, ...]:
    return (
        s.episode_id, s.agent or "(unnamed)", s.task, s.variant, s.episode_class or "-",
        f"{s.reward:.2f}", s.unverified or "",
    )  # fmt: skip


def unverified_table(run: RunData, limit: int = 30) -> Table:
    """The unverified episodes, with what they claim."""
    table = Table(title=f"[yellow]{TITLE}[/]", caption=shown(unverified_caption(run)))
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for s in run.unverified[:limit]:
        table.add_row(*(shown(cell, one_line=True) for cell in _cells(s)))
    return table


def unverified_html(run: RunData, limit: int = 200) -> str:
    """The same, as an HTML section body ("" when no episode is unverified)."""
    if not run.unverified:
        return ""
    head = "".join(f"<th>{escape(c)}</th>" for c in COLUMNS)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{escape(printable(c, one_line=True))}</td>" for c in _cells(s))
        + "</tr>"
        for s in run.unverified[:limit]
    )
    return (
        f"<p class='note'>{escape(unverified_caption(run))}</p><table><tr>{head}</tr>{body}</table>"
    )


def gate_notes(base: RunData, candidate: RunData) -> list[str]:
    """What the gate says of the unverified episodes of each run (none: no line)."""
    notes = []
    for side, run in (("base", base), ("candidate", candidate)):
        if run.unverified:
            why = sorted({s.unverified or "" for s in run.unverified})
            notes.append(
                f"{side}: {len(run.unverified)} unverified episodes counted in no check "
                f"({'; '.join(printable(w, one_line=True) for w in why[:3])})"
            )
    return notes
