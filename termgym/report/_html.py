"""The self-contained HTML report: inline CSS and SVG, no script, no external resource."""

from __future__ import annotations

import time
from html import escape
from pathlib import Path

from termgym.analysis.metrics import CLASSES, Estimate, order_variants
from termgym.recording import write_whole
from termgym.report._disclosure import disclosure_html, draw_text
from termgym.report._honesty import honesty_html
from termgym.report._load import RunData
from termgym.report._svg import CLASS_COLORS, Bar, bar_chart, class_strip
from termgym.report._trust import trust_html

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1100px;
color:#222;padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;
border-bottom:1px solid #ddd;padding-bottom:.2rem}
.meta{color:#666}table{border-collapse:collapse;margin:.5rem 0;font-size:13px}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
.ci{color:#777;font-size:12px}.chart{display:block;margin:.5rem 0}
.excerpt{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;
word-break:break-word}
.kind-leak{color:#b3261e;font-weight:600}.kind-platform{color:#8a5a00;font-weight:600}
.note{color:#666;font-size:12px}
"""


def _cell(e: Estimate, percent: bool = True) -> str:
    if e.value is None:
        return '<td class="num">n/a</td>'
    scale = 100.0 if percent else 1.0
    ci = ""
    if e.low is not None and e.high is not None:
        ci = f' <span class="ci">[{e.low * scale:.1f}, {e.high * scale:.1f}]</span>'
    unit = "%" if percent else ""
    return f'<td class="num">{e.value * scale:.1f}{unit}{ci} <span class="ci">n={e.n}</span></td>'


def _heat(passes: int, n: int) -> str:
    rate = passes / n if n else 0.0
    # white to green by pass rate
    g = int(255 - 120 * rate)
    return (
        f'<td class="num" style="background:rgb({g},{235 + int(20 * (1 - rate))},{g})">'
        f"{passes}/{n}</td>"
    )


def _metrics_table(run: RunData) -> str:
    agents = list(run.metrics)
    names = [
        ("overall_pass_rate", "pass rate (possible variants)"),
        ("drop", "drop original → contradicted"),
        ("adaptation_rate", "adaptation rate"),
        ("stale_rate", "stale-rule rate"),
        ("memorization_index", "memorization index stale/(stale+adapted)"),
        ("withheld_hit_rate", "withheld-rule hit rate"),
        ("top_share", "share of passes in the top 20% of tasks"),
        ("gini", "Gini of per-task pass rates"),
    ]
    head = "".join(f"<th>{escape(a or '(unnamed)')}</th>" for a in agents)
    rows = []
    for key, label in names:
        cells = "".join(_cell(run.metrics[a].headline()[key]) for a in agents)
        rows.append(f"<tr><th>{escape(label)}</th>{cells}</tr>")
    counts = "".join(
        f'<td class="num">{m.episodes} counted · {m.infra_errors} infra errors · '
        f"{m.agent_errors} agent errors · {m.grader_errors} grader errors</td>"
        for m in run.metrics.values()
    )
    rows.append(f"<tr><th>episodes</th>{counts}</tr>")
    return f"<table><tr><th>metric</th>{head}</tr>{''.join(rows)}</table>"


def _pass_rate_chart(run: RunData) -> str:
    variants = order_variants({v for m in run.metrics.values() for v in m.pass_rate})
    series = {}
    for agent, m in run.metrics.items():
        series[agent or "(unnamed)"] = [
            Bar(e.value, e.low, e.high) if (e := m.pass_rate.get(v)) else Bar(None)
            for v in variants
        ]
    level = next(iter(run.metrics.values())).confidence if run.metrics else 0.95
    return bar_chart(
        variants,
        series,
        title=f"Pass rate per variant ({level:.0%} bootstrap interval)",
        chart_id="pass-rate-chart",
    )


def _class_chart(run: RunData) -> str:
    rows: dict[str, list[tuple[str, str | None]]] = {}
    for s in sorted(run.summaries, key=lambda s: (s.agent, s.task, s.episode_id)):
        if s.variant == "contradicted" and not s.infra_error:
            rows.setdefault(s.agent or "(unnamed)", []).append(
                (f"{s.task} · {s.episode_id}", s.episode_class)
            )
    if not rows:
        return '<p class="note">No contradicted episodes in this run.</p>'
    return class_strip(rows, title="Class of each contradicted episode", chart_id="class-chart")


def _class_table(run: RunData) -> str:
    rows = []
    for agent, m in run.metrics.items():
        for variant, counts in m.class_counts.items():
            if not any(counts.values()):  # an original episode has a class only when not graded
                continue
            cells = "".join(
                f'<td class="num" style="border-left:4px solid {CLASS_COLORS[c]}">{counts[c]}</td>'
                for c in CLASSES
            )
            rows.append(f"<tr><td>{escape(agent)}</td><td>{escape(variant)}</td>{cells}</tr>")
    if not rows:
        return ""
    head = "".join(f"<th>{c}</th>" for c in CLASSES)
    return f"<table><tr><th>agent</th><th>variant</th>{head}</tr>{''.join(rows)}</table>"


def _task_table(run: RunData) -> str:
    parts = []
    for agent, m in run.metrics.items():
        variants = order_variants({v for per in m.per_task.values() for v in per})
        head = "".join(f"<th>{escape(v)}</th>" for v in variants)
        rows = []
        for task, per in sorted(m.per_task.items()):
            cells = "".join(_heat(*per[v]) if v in per else "<td></td>" for v in variants)
            rows.append(f"<tr><td>{escape(task)}</td>{cells}</tr>")
        parts.append(
            f"<h3>{escape(agent or '(unnamed)')}</h3><table><tr><th>task</th>{head}"
            f"</tr>{''.join(rows)}</table>"
        )
    return "".join(parts)


def _audit_section(run: RunData, limit: int = 200) -> str:
    audit = run.audit

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x * 100:.1f}%"

    rows = []
    for agent in run.metrics:
        a = audit.for_agent(agent)
        if not a.episodes:
            continue
        rows.append(
            f"<tr><td>{escape(agent or '(unnamed)')}</td><td class='num'>{a.episodes}</td>"
            f"<td class='num'>{pct(a.leak_rate)}</td>"
            f"<td class='num'>{a.episodes_with('leak-name')}</td>"
            f"<td class='num'>{pct(a.platform_rate)}</td>"
            f"<td class='num'>{pct(a.marker_rate)}</td><td class='num'>{len(a.probes)}</td>"
            f"<td class='num'>{pct(a.disclosure_rate)}</td></tr>"
        )
    out = [
        "<table><tr><th>agent</th><th>episodes</th><th>leak rate</th>"
        "<th>episodes with rule-name leaks</th><th>platform-mention rate</th>"
        "<th>marker-imitation rate</th>"
        f"<th>probes</th><th>probe disclosure rate</th></tr>{''.join(rows)}</table>"
    ]
    if audit.hits:
        rows = [
            f"<tr><td>{escape(h.episode_id)}</td><td class='num'>{h.step}</td>"
            f"<td class='kind-{escape(h.kind.split('-')[0])}'>{escape(h.kind)}</td>"
            f"<td>{escape(h.source)}</td><td>{escape(h.detail)}</td>"
            f"<td class='excerpt'>{escape(h.excerpt)}</td></tr>"
            for h in audit.ranked_hits()[:limit]
        ]
        more = len(audit.hits) - limit
        out.append(
            "<table><tr><th>episode</th><th>step</th><th>kind</th><th>source</th>"
            f"<th>what</th><th>excerpt</th></tr>{''.join(rows)}</table>"
        )
        if more > 0:
            out.append(f'<p class="note">... and {more} more hits.</p>')
    if audit.probes:
        rows = [
            f"<tr><td>{escape(p.episode_id)}</td><td>{'yes' if p.disclosed else 'no'}</td>"
            f"<td>{escape(', '.join(p.hidden_mentioned))}</td>"
            f"<td>{escape(', '.join(p.current_mentioned))}</td></tr>"
            for p in audit.probes
        ]
        out.append(
            "<h3>Disclosure probe</h3><table><tr><th>episode</th><th>disclosed</th>"
            f"<th>hidden values named</th><th>current rules stated</th></tr>"
            f"{''.join(rows)}</table>"
        )
    return "".join(out)


def render_html(run: RunData) -> str:
    """The whole report as one HTML document."""
    agents = ", ".join(a or "(unnamed)" for a in run.metrics) or "none"
    skipped = ""
    if run.skipped:
        items = "".join(f"<li>{escape(n)}</li>" for n in run.skipped[:50])
        skipped = f"<h2>Unreadable lines</h2><ul class='note'>{items}</ul>"
    first = next(iter(run.metrics.values()), None)
    resamples = first.resamples if first else 0
    level = f"{first.confidence:.0%}" if first else "95%"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>termgym report · {escape(run.run_id)}</title><style>{CSS}</style></head>
<body>
<h1>termgym run {escape(run.run_id)}</h1>
<p class="meta">agents: {escape(agents)} · {len(run.summaries)} episodes · intervals: {level}
percentile bootstrap over {resamples} resamples (tasks, then episodes) · generated
{escape(time.strftime("%Y-%m-%d %H:%M:%S"))}</p>
<p class="meta" id="draws">values drawn: {escape(draw_text(run))}</p>
<h2>Pass rate per variant</h2>
{_pass_rate_chart(run)}
<h2>Memorization metrics</h2>
{_metrics_table(run)}
<h2>Contradicted episodes by class</h2>
{_class_chart(run)}
{_class_table(run)}
<h2>Cheating and tamper evidence</h2>
{honesty_html(run)}
<h2>Grading trust</h2>
{trust_html(run)}
<h2>Per-task breakdown (passes / episodes)</h2>
{_task_table(run)}
<h2>Trace audit</h2>
{_audit_section(run)}
<h2>Scores conditioned on disclosure</h2>
{disclosure_html(run)}
{skipped}
</body></html>
"""


def write_html(run: RunData, path: str | Path) -> Path:
    """Write the report; returns its path."""
    return write_whole(Path(path), render_html(run))
