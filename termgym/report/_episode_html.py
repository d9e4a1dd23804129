"""The HTML report's episodes: the list of every episode, and one view per episode (why it
ended so, the rule values of each rule set, the verdicts with the failing tests, the agent's
actions, the audit's hits), which every chart and table of the report links to.

A view is a section of the same page, shown over the report when its address is the page's
target (`report.html#ep-<id>`, CSS `:target`): no script, one file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from html import escape

from termgym.analysis.explain import show
from termgym.analysis.metrics import EpisodeSummary, order_variants
from termgym.report._episodes import EpisodeDetail, ShownStep
from termgym.report._load import RunData
from termgym.report._svg import CLASS_COLORS, OUTCOME_COLORS
from termgym.tasks import TAMPER_KINDS

CSS = """
.episode{display:none}
.episode:target{display:block;position:fixed;inset:0;overflow:auto;background:rgba(0,0,0,.35);
z-index:10;padding:1.5rem 0}
.sheet{background:#fff;max-width:1050px;margin:0 auto;padding:1rem 1.5rem 2rem;border-radius:6px;
box-shadow:0 4px 24px rgba(0,0,0,.3)}
.sheet h2{margin-top:.3rem}.sheet h3{font-size:1rem;margin:1.1rem 0 .3rem}
.why{font-size:15px;background:#fbf7e9;border-left:4px solid #e0b000;padding:.5rem .75rem;
margin:.5rem 0}
.badge{display:inline-block;padding:0 .45rem;border-radius:3px;font-size:12px;font-weight:600;
color:#fff;margin-right:.3rem}
.changed{background:#fde2df}.misled{background:#fff1c2}.withheld{color:#b3261e;font-weight:600}
.pass{color:#2e7d32;font-weight:600}.fail{color:#b3261e;font-weight:600}
pre.action,pre.output{margin:.2rem 0;padding:.35rem .5rem;background:#f6f6f6;
white-space:pre-wrap;word-break:break-word;font-size:12px;max-height:16rem;overflow:auto}
pre.output{background:#111;color:#eee}
code.cmd{background:#f1f1f1;padding:.1rem .3rem}
tr:target{outline:2px solid #e0b000}
li.reported{list-style:none;border-left:3px solid #c9b8e6;padding-left:.5rem;margin:.2rem 0}
li.reported pre.action{font-style:italic;background:#f4f0fa}
"""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def anchor(*parts: str) -> str:
    """A fragment id made of `parts`, the same for the same parts (any text made safe)."""
    return "-".join(_UNSAFE.sub(lambda m: f"_{ord(m.group()):x}_", p) for p in parts)


def episode_href(episode_id: str) -> str:
    """Where an episode's view is."""
    return f"#{anchor('ep', episode_id)}"


def list_href(agent: str, variant: str | None = None, task: str | None = None) -> str:
    """Where the list's rows of an agent (a variant of it, a task of that) begin."""
    parts = [p for p in (agent or "(unnamed)", variant, task) if p is not None]
    return f"#{anchor('list', *parts)}"


def episode_link(episode_id: str) -> str:
    """The episode id as a link to its view."""
    return f'<a href="{episode_href(episode_id)}">{escape(episode_id)}</a>'


def outcome(summary: EpisodeSummary) -> str:
    """What the list shows in its class column: the class, an impossible episode's outcome
    (cheated, reported, failed), passed/failed for an original one, or error."""
    if summary.infra_error:
        return "error"
    if summary.impossible:
        return (
            "cheated" if summary.passed else ("reported" if summary.conflict_reported else "failed")
        )
    return summary.episode_class or ("passed" if summary.passed else "failed")


COLORS: dict[str | None, str] = {
    **CLASS_COLORS,
    **OUTCOME_COLORS,
    "passed": "#2e9e4f",
    "failed": "#9a9a9a",
    "error": "#555",
}
"""The badge color of each outcome the list shows."""


def badges(summary: EpisodeSummary) -> list[tuple[str, str]]:
    """(color, text) of the marks an episode carries in the list and its view: its outcome,
    then its flags (tamper evidence, a conflict reported where there was none)."""
    found = [(COLORS.get(outcome(summary), "#555"), outcome(summary))]
    if summary.tampered:
        found.append(("#8a5a00", "tampered: " + ", ".join(summary.tamper_kinds)))
    if summary.conflict_reported and not summary.impossible:
        found.append(("#8a5a00", "reported a conflict"))
    if summary.agent_error:
        found.append(("#8a5a00", "agent error"))
    return found


def _badges_html(summary: EpisodeSummary) -> str:
    return "".join(
        f'<span class="badge" style="background:{color}">{escape(text)}</span>'
        for color, text in badges(summary)
    )


def ordered(summaries: Iterable[EpisodeSummary]) -> list[EpisodeSummary]:
    """Episodes as the list shows them: by agent, variant (in the usual order), task, id."""
    items = list(summaries)
    rank = {v: i for i, v in enumerate(order_variants({s.variant for s in items}))}
    return sorted(items, key=lambda s: (s.agent, rank[s.variant], s.task, s.episode_id))


def episode_list(run: RunData) -> str:
    """Every episode, a row each, grouped by agent and variant; each links to its view."""
    rows = []
    seen: set[str] = set()
    for s in ordered(run.summaries):
        ids = []
        for key in (
            list_href(s.agent),
            list_href(s.agent, s.variant),
            list_href(s.agent, s.variant, s.task),
        ):
            if key not in seen:
                seen.add(key)
                ids.append(key[1:])
        marks = "".join(f'<span id="{i}"></span>' for i in ids[:-1])
        row_id = ids[-1] if ids else anchor("row", s.episode_id)
        detail = run.episodes.get(s.episode_id)
        why = detail.explanation.short if detail is not None else ""
        rows.append(
            f'<tr id="{row_id}"><td>{marks}{episode_link(s.episode_id)}</td>'
            f"<td>{escape(s.agent or '(unnamed)')}</td><td>{escape(s.task)}</td>"
            f"<td>{escape(s.variant)}</td><td>{_badges_html(s)}</td>"
            f'<td class="num">{s.reward:.2f}</td><td class="num">{s.steps}</td>'
            f"<td>{escape(why)}</td></tr>"
        )
    if not rows:
        return "<p class='note'>No episode.</p>"
    head = "".join(
        f"<th>{c}</th>"
        for c in ("episode", "agent", "task", "variant", "class", "reward", "steps", "why")
    )
    return f"<table id='episode-list'><tr>{head}</tr>{''.join(rows)}</table>"


def _rules_table(detail: EpisodeDetail) -> str:
    if not detail.rules:
        return "<p class='note'>No rule values recorded (the episode has no header).</p>"
    shadows = list(dict.fromkeys(n for line in detail.rules for n in line.shadows))
    head = "".join(f"<th>{escape(n)} (shadow)</th>" for n in shadows)
    rows = []
    for line in detail.rules:
        if line.surface:
            blank = "".join("<td></td>" for _ in shadows)
            rows.append(
                f"<tr class='note'><td>{escape(line.name)}</td><td>{escape(show(line.seen))}</td>"
                f"<td>{escape(show(line.enforced))}</td>{blank}"
                "<td>surface value (not a rule): drawn for this episode</td></tr>"
            )
            continue
        notes = []
        if line.withheld:
            seen = "<span class='withheld'>withheld</span>"
            notes.append("not shown to the agent")
        else:
            seen = escape(show(line.seen))
        if line.misled:
            notes.append("the agent was shown another value than the one in force")
        cells = []
        for name in shadows:
            if name not in line.shadows:
                cells.append("<td></td>")
                continue
            changed = line.changed_from(name)
            cells.append(
                f"<td{' class=changed' if changed else ''}>{escape(show(line.shadows[name]))}</td>"
            )
            if changed:
                notes.append(f"differs from {name}")
        rows.append(
            f"<tr><td>{escape(line.name)}</td><td{' class=misled' if line.misled else ''}>"
            f"{seen}</td><td{' class=changed' if line.changed else ''}>"
            f"{escape(show(line.enforced))}</td>{''.join(cells)}"
            f"<td>{escape('; '.join(notes))}</td></tr>"
        )
    return (
        "<table class='rules'><tr><th>rule</th><th>the agent saw</th><th>in force (enforced)</th>"
        f"{head}<th>note</th></tr>{''.join(rows)}</table>"
    )


def _verdicts_table(detail: EpisodeDetail) -> str:
    if not detail.verdicts:
        return "<p class='note'>No verdict recorded.</p>"
    rows = []
    for v in detail.verdicts:
        mark = (
            "could not run"
            if v.passed is None
            else ("<span class=pass>pass</span>" if v.passed else "<span class=fail>fail</span>")
        )
        tests = [f for f in detail.failures if f.ruleset == v.ruleset]
        failing = "".join(
            f"<li><code>{escape(f.test or f.grader)}</code>"
            + (f": <span class='note'>{escape(f.message[:300])}</span>" if f.message else "")
            + "</li>"
            for f in tests
        )
        role = "own (decides the reward)" if v.own else "shadow (recorded, never rewarded)"
        score = "—" if v.score is None else f"{v.score:.2f}"
        rows.append(
            f"<tr><td>{escape(v.ruleset)}</td><td>{role}</td><td>{mark}</td>"
            f"<td class='num'>{score}</td><td>{'<ul>' + failing + '</ul>' if failing else ''}"
            f"{escape(v.error or '')}</td></tr>"
        )
    return (
        "<table class='verdicts'><tr><th>rule set</th><th>role</th><th>verdict</th>"
        f"<th>score</th><th>failing tests</th></tr>{''.join(rows)}</table>"
    )


def _tamper(detail: EpisodeDetail) -> str:
    evidence = detail.tamper
    if evidence is None:
        return "<p class='note'>Tamper evidence: not read.</p>"
    if not evidence.tampered:
        return "<p class='note'>Tamper evidence: none.</p>"
    items = "".join(
        f"<li><b>{kind}</b> {escape(change.kind)} <code>{escape(change.path)}</code></li>"
        for kind in TAMPER_KINDS
        for change in evidence.of(kind)
    )
    return f"<h3>Tamper evidence</h3><ul>{items}</ul>"


def _hits(detail: EpisodeDetail) -> str:
    if not detail.hits:
        return "<p class='note'>Trace audit: no hits.</p>"
    rows = "".join(
        f"<tr><td class='num'>{h.step}</td><td class='kind-{escape(h.kind.split('-')[0])}'>"
        f"{escape(h.kind)}</td><td>{escape(h.source)}</td><td>{escape(h.detail)}</td>"
        f"<td class='excerpt'>{escape(h.excerpt)}</td></tr>"
        for h in detail.hits
    )
    return (
        "<h3>Trace audit</h3><table><tr><th>step</th><th>kind</th><th>source</th><th>what</th>"
        f"<th>excerpt</th></tr>{rows}</table>"
    )


def _step_item(step: ShownStep, label: str) -> str:
    exit_code = "" if step.exit_code is None else f" · exit {step.exit_code}"
    output = (
        f"<details><summary>output ({len(step.output.splitlines())} lines)</summary>"
        f"<pre class='output'>{escape(step.output)}</pre></details>"
        if step.output.strip()
        else "<span class='note'>no output</span>"
    )
    return (
        f"<li><span class='note'>{label} · {escape(step.mode)}{exit_code}</span>"
        f"<pre class='action'>{escape(step.action)}</pre>{output}</li>"
    )


REPORTED_NOTE = (
    "the agent's own log says it ran these inside this step; termgym did not run or see them: "
    "shown for reading, never graded or audited"
)


def _reported(steps: Sequence[ShownStep], where: str) -> str:
    items = "".join(_step_item(s, f"↳ reported {s.index} (in step {s.within})") for s in steps)
    return f"<li class='reported'><span class='note'>{where}</span><ol>{items}</ol></li>"


def _steps(detail: EpisodeDetail, replay: str) -> str:
    if not detail.steps:
        return "<p class='note'>No step recorded.</p>"
    inside: dict[int | None, list[ShownStep]] = {}
    for reported in detail.reported:
        inside.setdefault(reported.within, []).append(reported)
    out = []
    for number, step in enumerate(detail.steps):
        if number and step.index != detail.steps[number - 1].index + 1:
            gap = step.index - detail.steps[number - 1].index - 1
            out.append(f"<li class='note'>… {gap} steps not shown …</li>")
        out.append(_step_item(step, f"step {step.index}"))
        if step.index in inside:
            out.append(_reported(inside.pop(step.index), REPORTED_NOTE))
    rest = [s for steps in inside.values() for s in steps]
    if rest:
        out.append(_reported(rest, "reported by the agent's own log inside steps not shown"))
    more = (
        f"<p class='note'>{detail.steps_left_out} of {detail.step_count} steps not shown; "
        f"replay every step: <code class='cmd'>{escape(replay)}</code></p>"
        if detail.steps_left_out
        else ""
    )
    if detail.reported_count > len(detail.reported):
        more += (
            f"<p class='note'>{detail.reported_count - len(detail.reported)} of "
            f"{detail.reported_count} steps the agent's own log reports not shown</p>"
        )
    return f"<ol class='steps'>{''.join(out)}</ol>{more}"


def episode_view(summary: EpisodeSummary, detail: EpisodeDetail | None) -> str:
    """One episode's view: a section shown when its address is the target."""
    eid = summary.episode_id
    replay = f"termgym tui {detail.path}" if detail is not None and detail.path else ""
    back = f"#{anchor('list', summary.agent or '(unnamed)', summary.variant, summary.task)}"
    head = (
        f"<p class='note'><a href='{escape(back)}'>← back to the list</a> · "
        "<a href='#top'>top of the report</a></p>"
        f"<h2>{escape(eid)}</h2>"
        f"<p class='meta'>agent <b>{escape(summary.agent or '(unnamed)')}</b> · task "
        f"<b>{escape(summary.task)}</b> · variant <b>{escape(summary.variant)}</b> · reward "
        f"{summary.reward:.2f} · {summary.steps} steps</p>"
        f"<p class='marks'>{_badges_html(summary)}</p>"
    )
    if detail is None:
        return (
            f"<section class='episode' id='{anchor('ep', eid)}'><div class='sheet'>{head}"
            "<p class='note'>Nothing recorded of this episode.</p></div></section>"
        )
    parts = [
        head,
        "<h3>Why</h3>",
        f"<p class='why'>{escape(detail.explanation.text)}</p>",
        "<h3>Rule values</h3>",
        "<p class='note'>What the agent saw, what its own graders enforce, and what each "
        "shadow rule set holds (the same final state graded again, recorded and never "
        "rewarded). A highlighted value differs from the one in force.</p>",
        _rules_table(detail),
        "<h3>Verdicts</h3>",
        _verdicts_table(detail),
    ]
    if detail.conflict_reported is not None:
        reason = detail.conflict_reported or "(no reason given)"
        parts.append(f"<p><b>Reported a conflict:</b> {escape(reason)}</p>")
    parts += [_tamper(detail), _hits(detail)]
    if detail.instruction:
        parts.append(
            "<details><summary>The instruction it was given</summary>"
            f"<pre class='action'>{escape(detail.instruction)}</pre></details>"
        )
    reported = (
        f", {detail.reported_count} more reported by the agent's own log"
        if detail.reported_count
        else ""
    )
    parts += [f"<h3>Actions ({detail.step_count} steps{reported})</h3>", _steps(detail, replay)]
    if replay:
        parts.append(f"<p class='note'>Replay it: <code class='cmd'>{escape(replay)}</code></p>")
    body = "".join(parts)
    return (
        f"<section class='episode' id='{anchor('ep', eid)}'><div class='sheet'>{body}</div>"
        "</section>"
    )


def episode_views(run: RunData, summaries: Sequence[EpisodeSummary] | None = None) -> str:
    """Every episode's view."""
    chosen = ordered(run.summaries if summaries is None else summaries)
    return "".join(episode_view(s, run.episodes.get(s.episode_id)) for s in chosen)
