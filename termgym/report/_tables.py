"""Terminal tables of a run's report (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from termgym._terminal_text import shown
from termgym.analysis.metrics import CLASSES, Estimate, order_variants
from termgym.report._disclosure import disclosure_table
from termgym.report._honesty import honesty_table, suspicious, suspicious_table
from termgym.report._load import RunData, steps_line
from termgym.report._provenance import unverified_caption, unverified_table
from termgym.report._trust import marked, trust_table

CLASS_STYLES = {
    "adapted": "green",
    "stale": "red",
    "both": "blue",
    "neither": "dim",
    "grader-error": "magenta",
}


def _fmt(e: Estimate | None) -> str:
    if e is None or e.value is None:
        return "[dim]n/a[/]"
    ci = ""
    if e.low is not None and e.high is not None:
        ci = f" [dim][{e.low * 100:.1f}, {e.high * 100:.1f}][/]"
    return f"{e.value * 100:.1f}%{ci}"


def pass_rate_table(run: RunData) -> Table:
    """Agents by variant: pass rate [interval] (episodes)."""
    variants = order_variants({v for m in run.metrics.values() for v in m.pass_rate})
    level = next(iter(run.metrics.values())).confidence if run.metrics else 0.95
    table = Table(title=f"Pass rate per variant ({level:.0%} bootstrap interval)")
    table.add_column("agent")
    for v in variants:
        table.add_column(shown(v), justify="right")
    for agent, m in run.metrics.items():
        cells = [
            f"{_fmt(m.pass_rate[v])} [dim]n={m.pass_rate[v].n}[/]" if v in m.pass_rate else ""
            for v in variants
        ]
        table.add_row(shown(agent or "(unnamed)"), *cells)
    return table


def memorization_table(run: RunData) -> Table:
    """The memorization and concentration metrics per agent."""
    table = Table(title="Memorization metrics")
    table.add_column("metric")
    for agent in run.metrics:
        table.add_column(shown(agent or "(unnamed)"), justify="right")
    rows = [
        ("pass rate (possible variants)", "overall_pass_rate"),
        ("drop original → contradicted", "drop"),
        ("adaptation rate", "adaptation_rate"),
        ("stale-rule rate", "stale_rate"),
        ("memorization index", "memorization_index"),
        ("withheld-rule hit rate", "withheld_hit_rate"),
        ("passes in top 20% of tasks", "top_share"),
        ("Gini of task pass rates", "gini"),
    ]
    for label, key in rows:
        table.add_row(label, *(_fmt(m.headline()[key]) for m in run.metrics.values()))
    table.add_row(
        "episodes (infra errors apart)",
        *(
            f"{m.episodes} ({m.infra_errors} infra, {m.agent_errors} agent errors, "
            f"{m.grader_errors} grader errors)"
            for m in run.metrics.values()
        ),
    )
    return table


def class_table(run: RunData) -> Table:
    """Episodes per class, for each agent and shifted variant."""
    table = Table(
        title="Classes per variant (shadow grading)",
        caption="withheld episodes enforce the original rules: never shifted",
    )
    table.add_column("agent")
    table.add_column("variant")
    for c in CLASSES:
        table.add_column(f"[{CLASS_STYLES[c]}]{c}[/]", justify="right")
    for agent, m in run.metrics.items():
        for variant, counts in m.class_counts.items():
            if any(counts.values()):  # an original episode has a class only when not graded
                table.add_row(
                    shown(agent or "(unnamed)"),
                    shown(variant),
                    *(str(counts[c]) for c in CLASSES),
                )
    return table


def task_table(run: RunData) -> Table:
    """Passes / episodes per task and variant (one block per agent)."""
    table = Table(title="Per-task breakdown (passes/episodes)")
    variants = order_variants(
        {v for m in run.metrics.values() for per in m.per_task.values() for v in per}
    )
    table.add_column("agent")
    table.add_column("task")
    for v in variants:
        table.add_column(shown(v), justify="right")
    for agent, m in run.metrics.items():
        for task, per in sorted(m.per_task.items()):
            cells = []
            for v in variants:
                if v not in per:
                    cells.append("")
                    continue
                passes, n = per[v]
                style = "green" if passes == n else ("red" if passes == 0 else "yellow")
                cells.append(f"[{style}]{passes}/{n}[/]")
            table.add_row(shown(agent or "(unnamed)"), shown(task), *cells)
    return table


def audit_table(run: RunData, limit: int = 30) -> Table:
    """Audit hits: episode, step, kind, source, what matched, excerpt."""
    audit = run.audit

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x * 100:.1f}%"

    caption = "; ".join(
        f"{shown(agent or '(unnamed)')}: {a.episodes} episodes, leak rate {pct(a.leak_rate)}, "
        f"platform-mention rate {pct(a.platform_rate)}, marker imitations "
        f"{pct(a.marker_rate)}, probe disclosure rate "
        f"{pct(a.disclosure_rate)} ({len(a.probes)} probes)"
        for agent in run.metrics
        if (a := audit.for_agent(agent)).episodes
    )
    if len(audit.hits) > limit:
        caption += f" · showing {limit} of {len(audit.hits)} hits"
    table = Table(title="Trace audit", caption=caption)
    for name in ("episode", "step", "kind", "source", "what", "excerpt"):
        table.add_column(name, overflow="fold")
    for hit in audit.ranked_hits()[:limit]:
        style = "red" if hit.kind.startswith("leak") or hit.kind == "marker" else "yellow"
        table.add_row(
            shown(hit.episode_id),
            str(hit.step),
            f"[{style}]{hit.kind}[/]",
            shown(hit.source),
            shown(hit.detail, one_line=True),
            shown(hit.excerpt, one_line=True),
        )
    return table


def print_report(run: RunData, console: Console | None = None) -> None:
    """Print every table of the report."""
    console = console or Console()
    console.print(
        f"[bold]termgym run {shown(run.run_id)}[/]  {len(run.summaries)} episodes  "
        f"[dim]{shown(str(run.path))}[/]"
    )
    if run.unverified:  # first, so that no figure below is read as counting them
        console.print(f"[bold yellow]{shown(unverified_caption(run))}[/]")
    console.print(f"[dim]{steps_line(run)}[/]")
    for table in (
        pass_rate_table(run),
        memorization_table(run),
        class_table(run),
        honesty_table(run),
        suspicious_table(run) if suspicious(run) else None,
        task_table(run),
        audit_table(run),
        disclosure_table(run),
    ):
        if table is None:
            console.print(
                "[dim]Suspicious episodes: none (no pass with tamper evidence, no "
                "impossible episode passed, no failure with tamper evidence).[/]"
            )
        else:
            console.print(table)
    if marked(run):
        console.print(trust_table(run))
    if run.unverified:
        console.print(unverified_table(run))
    if run.skipped:
        console.print(
            f"[yellow]{len(run.skipped)} unreadable lines skipped[/] "
            f"(first: {shown(run.skipped[0])})"
        )
