"""Rules the agent saw against the hidden ones, the contradiction marked, the verdicts, the
failing tests, an impossible episode's conflict and the tamper evidence: why it ended so."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from termgym.analysis.explain import Explanation
from termgym.analysis.failures import Failure
from termgym.grading import GradeReport
from termgym.recording import EpisodeEnd, EpisodeHeader
from termgym.tasks import TAMPER_KINDS, TamperEvidence

from .agent_text import agent_text
from .model import row_class

CLASS_STYLE = {
    "passed": "green",
    "failed": "yellow",
    "adapted": "bold green",
    "stale": "bold red",
    "both": "bold cyan",
    "neither": "bold yellow",
    "grader-error": "bold magenta",
    "error": "bold white on red",
    "running": "italic",
}


def _fmt(value: Any) -> str:
    return "—" if value is None else str(value)


def rules_table(header: EpisodeHeader, report: GradeReport | None) -> Table:
    """Rule | agent saw | enforced | each shadow rule set; changed values highlighted."""
    shadows = {
        name: v.rules for name, v in (report.verdicts if report else {}).items() if v.rules_known
    }
    others = {n: r for n, r in shadows.items() if n != header.variant}
    table = Table(title="rules", title_justify="left", expand=False)
    table.add_column("rule", style="bold")
    table.add_column("agent saw")
    table.add_column("enforced")
    for name in others:
        table.add_column(agent_text(f"{name} (shadow)", one_line=True))
    table.add_column("note")
    names = list(dict.fromkeys([*header.rules_enforced, *header.rules_visible]))
    surface = header.extra.get("surface")
    surface = dict(surface) if isinstance(surface, dict) else {}
    for name in names:
        enforced = header.rules_enforced.get(name)
        visible = header.rules_visible.get(name, ...)
        notes: list[str] = []
        saw = Text("withheld", style="bold red") if visible is ... else agent_text(_fmt(visible))
        if visible is not ... and visible != enforced:
            saw.stylize("bold red")
            notes.append("agent saw a different value")
        enf = agent_text(_fmt(enforced))
        cells = []
        for rules in others.values():
            old = rules.get(name)
            cell = agent_text(_fmt(old))
            if name in rules and old != enforced:
                cell.stylize("bold yellow")
                enf.stylize("bold yellow reverse")
                notes.append("contradicts the original")
            cells.append(cell)
        if visible is ...:
            notes.append("withheld from the agent")
        notes_text = Text("; ".join(dict.fromkeys(notes)), style="italic")
        table.add_row(agent_text(name, one_line=True), saw, enf, *cells, notes_text)
    for name, value in surface.items():
        cells = [agent_text(_fmt(value), "dim") for _ in range(2 + len(others))]
        table.add_row(
            agent_text(name, one_line=True), *cells,
            Text("surface (not a rule): drawn for this episode", style="dim italic"),
        )  # fmt: skip
    return table


def verdict_table(report: GradeReport | None) -> Table:
    """Shadow grading: each rule set's pass, score, error and graders."""
    table = Table(title="verdicts (shadow grading)", title_justify="left")
    for column in ("rule set", "passed", "score", "graders", "error"):
        table.add_column(column)
    for name, verdict in (report.verdicts if report else {}).items():
        passed, score = verdict.passed, verdict.score
        mark = (
            Text("pass", style="bold green")
            if passed
            else (Text("fail", style="bold red") if passed is False else Text("?", style="dim"))
        )
        graders = ", ".join(f"{r.grader}:{'✓' if r.passed else '✗'}" for r in verdict.results)
        table.add_row(
            agent_text(name, one_line=True),
            mark,
            _fmt(score if score is None else f"{score:.2f}"),
            agent_text(graders, one_line=True),
            agent_text(_fmt(verdict.error), "red"),
        )
    return table


def failures_table(failures: list[Failure]) -> Table | Text:
    """The failing tests of each rule set, with their messages."""
    if not failures:
        return Text("failing tests: none", style="dim")
    table = Table(title="failing tests", title_justify="left")
    for column in ("rule set", "grader", "test", "message"):
        table.add_column(column, overflow="fold")
    for f in failures:
        table.add_row(
            agent_text(f.ruleset), agent_text(f.grader), agent_text(f.test or "—"),
            agent_text(f.message[:400], "red"),
        )  # fmt: skip
    return table


def conflict_text(conflict: dict[str, Any] | None, end: EpisodeEnd | None) -> Text | None:
    """An impossible episode's conflict, and whether the agent reported one (any episode)."""
    text = Text()
    if conflict:
        text.append("impossible: ", style="bold red")
        shown = ", ".join(str(p).split("/", 1)[-1] for p in conflict.get("shown_in") or ())
        text.append(
            f"the task states {conflict.get('rule')} = {_fmt(conflict.get('stated'))}; the "
            f"graders enforce {_fmt(conflict.get('enforced'))}, shown only by {shown}"
        )
    if end is not None and end.conflict is not None:
        if text:
            text.append("\n")
        text.append("reported a conflict: ", style="bold yellow")
        text.append(agent_text(end.conflict or "(no reason given)"))
    elif conflict and end is not None:
        text.append("\nthe agent did not report the conflict", style="italic")
    return text if text else None


def tamper_text(evidence: TamperEvidence | None) -> Text:
    """The tamper evidence: what it changed among the task's files, the toolchain, the system."""
    if evidence is None:
        return Text("tamper evidence: not read", style="dim")
    if not evidence.tampered:
        note = "" if evidence.known else " (changes outside the work unknown on this backend)"
        return Text(f"tamper evidence: none{note}", style="dim")
    text = Text("tamper evidence", style="bold red")
    for kind in TAMPER_KINDS:
        for change in evidence.of(kind):
            text.append(f"\n  {kind:<9} ", style="bold")
            text.append(agent_text(f"{change.kind:<7} {change.path}"))
            if change.type != "unknown":
                text.append(f" ({change.type})", style="dim")
    return text


class RulesPanel(Static):
    """The episode's rules and verdict matrix."""

    DEFAULT_CSS = """
    RulesPanel { height: auto; padding: 0 1; }
    """

    def show(
        self,
        header: EpisodeHeader | None,
        end: EpisodeEnd | None,
        report: GradeReport | None = None,
        unreadable: str | None = None,
        failures: list[Failure] | None = None,
        tamper: TamperEvidence | None = None,
        explanation: Explanation | None = None,
    ) -> None:
        """Draw the panel for an episode (header None: nothing known).

        `report`: the end line's verdicts read back (`GradeReport.from_wire`); `unreadable`:
        why they could not be, shown instead of the verdicts; `failures`: the failing tests
        of each rule set; `tamper`: the episode's tamper evidence; `explanation`: why it
        ended so (`termgym.analysis.explain`), said first.
        """
        if header is None:
            self.update(Text("no header: rules unknown", style="italic"))
            return
        summary = Text()
        summary.append(f"{header.task} v{header.task_version}", style="bold")
        summary.append(f"  variant {header.variant}  seed {header.seed}  agent {header.agent}")
        summary.append(f"  backend {header.backend}\n")
        if end is None:
            summary.append("running: no verdict yet", style=CLASS_STYLE["running"])
        else:
            episode_class = row_class(end, header.variant)
            summary.append("class ")
            summary.append(episode_class, style=CLASS_STYLE.get(episode_class, ""))
            summary.append(f"  reward {end.reward:.2f}")
            summary.append("  submitted" if end.terminated else "  truncated (limit)")
            if end.error:
                summary.append(agent_text(f"\nerror: {end.error}", "bold red"))
            if unreadable:
                summary.append(agent_text(f"\nverdicts unreadable: {unreadable}", "bold red"))
        if end is not None and explanation is not None:
            summary.append("\nwhy: ", style="bold")
            summary.append(agent_text(explanation.text))
        conflict = header.extra.get("conflict")
        parts: list[Any] = [summary]
        said = conflict_text(conflict if isinstance(conflict, dict) else None, end)
        if said is not None and explanation is None:  # the explanation says it, once ended
            parts.append(said)
        parts += [rules_table(header, report), verdict_table(report)]
        if end is not None:
            parts += [failures_table(failures or []), tamper_text(tamper)]
        self.update(Group(*parts))
