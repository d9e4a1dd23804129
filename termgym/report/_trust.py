"""What each verdict's trust rests on: snapshot grading, and the verifier's defences that did
not hold (docs/security.md), shown apart so that no such verdict passes for a clean one."""

from __future__ import annotations

from html import escape

from rich.table import Table

from termgym._terminal_text import shown
from termgym.analysis.metrics import EpisodeSummary
from termgym.report._episode_html import episode_link
from termgym.report._load import RunData


def marked(run: RunData) -> list[EpisodeSummary]:
    """The episodes graded on a snapshot or with a gap in the verifier's isolation."""
    return [s for s in run.summaries if s.filesystem != "work" or s.isolation]


def trust_caption(run: RunData) -> str:
    """One line: how many verdicts rest on what."""
    episodes = len(run.summaries)
    snapshot = sum(1 for s in run.summaries if s.filesystem == "snapshot")
    gaps = sum(1 for s in run.summaries if s.isolation)
    return (
        f"{snapshot} of {episodes} episodes graded on the agent's whole filesystem (snapshot); "
        f"{gaps} verdicts rest on weaker isolation (the tests loaded the agent's code, or a "
        "defence of the verifier did not hold: docs/security.md)"
    )


def trust_table(run: RunData, limit: int = 30) -> Table:
    """The marked episodes, those with isolation gaps first."""
    table = Table(title="Grading trust", caption=trust_caption(run))
    for column in ("episode", "agent", "task", "variant", "class", "reward", "graded on", "gaps"):
        table.add_column(column)
    rows = sorted(marked(run), key=lambda s: (not s.isolation, s.episode_id))
    for s in rows[:limit]:
        table.add_row(
            shown(s.episode_id), shown(s.agent or "(unnamed)"), shown(s.task), s.variant,
            s.episode_class or "-", f"{s.reward:.2f}", shown(s.filesystem),
            shown("; ".join(s.isolation), one_line=True) or "-",
        )  # fmt: skip
    return table


def trust_html(run: RunData, limit: int = 200) -> str:
    """The same, as an HTML section body."""
    rows = sorted(marked(run), key=lambda s: (not s.isolation, s.episode_id))
    body = "".join(
        f"<tr><td>{episode_link(s.episode_id)}</td><td>{escape(s.agent or '(unnamed)')}</td>"
        f"<td>{escape(s.task)}</td><td>{escape(s.variant)}</td>"
        f"<td>{escape(s.episode_class or '-')}</td><td>{s.reward:.2f}</td>"
        f"<td>{escape(s.filesystem)}</td><td>{escape('; '.join(s.isolation)) or '-'}</td></tr>"
        for s in rows[:limit]
    )
    head = "".join(
        f"<th>{c}</th>"
        for c in ("episode", "agent", "task", "variant", "class", "reward", "graded on", "gaps")
    )
    table = f"<table><tr>{head}</tr>{body}</table>" if rows else ""
    return f"<p class='note'>{escape(trust_caption(run))}</p>{table}"
