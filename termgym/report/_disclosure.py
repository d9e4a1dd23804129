"""The report's disclosure-conditioned scores, probe modes and value draws (HTML and rich)."""

from __future__ import annotations

from html import escape
from typing import Any

from rich.table import Table

from termgym._terminal_text import shown
from termgym.analysis.metrics import Estimate
from termgym.report._episode_html import list_href
from termgym.report._load import RunData


def _pct(e: Estimate) -> str:
    return e.format() if e.value is not None else "n/a"


def _points(e: Estimate) -> str:
    if e.value is None:
        return "n/a"
    bounds = ""
    if e.low is not None and e.high is not None:
        bounds = f" [{e.low * 100:+.1f}, {e.high * 100:+.1f}]"
    return f"{e.value * 100:+.1f} pts{bounds}"


def draws(run: RunData) -> list[dict[str, Any]]:
    """The value draws of the run (one per run folder pooled): split, contradicted mode, and
    the secret's fingerprint and period when the evaluator gave one."""
    headers = run.header.get("runs", [run.header]) if run.header else []
    out = []
    for header in headers:
        draw = header.get("draw") if isinstance(header, dict) else None
        out.append(
            {"run": header.get("run_id", ""), **draw}
            if isinstance(draw, dict)
            else {"run": header.get("run_id", ""), "split": "train", "contradict": "fixed"}
        )
    return out


def draw_text(run: RunData) -> str:
    """One line saying which values the run's shifted variants drew."""
    parts = []
    for d in draws(run):
        split = "held-out values (split eval)" if d.get("split") == "eval" else "training values"
        text = f"{d['run']}: {split}, contradicted {d.get('contradict', 'fixed')}"
        if d.get("secret_id"):
            text += f", evaluator's secret {d['secret_id']} period {d.get('period', '-')}"
        parts.append(text)
    return "; ".join(parts)


def disclosure_html(run: RunData) -> str:
    """Pass rates on disclosed vs undisclosed episodes and tasks, per agent; disclosure per
    probe mode."""
    rows = []
    for agent, split in run.disclosure.items():
        for unit, d, u, diff in split.rows():
            rows.append(
                f"<tr><td><a href='{escape(list_href(agent))}'>{escape(agent or '(unnamed)')}"
                f"</a></td><td>{unit}</td>"
                f"<td class='num'>{escape(_pct(d))} <span class='note'>n={d.n}</span></td>"
                f"<td class='num'>{escape(_pct(u))} <span class='note'>n={u.n}</span></td>"
                f"<td class='num'>{escape(_points(diff))}</td></tr>"
            )
    if not rows:
        return "<p class='note'>No counted episode.</p>"
    modes = []
    for agent, split in run.disclosure.items():
        for mode, (hits, total) in split.by_mode.items():
            rate = f"{hits / total * 100:.1f}%" if total else "n/a"
            modes.append(
                f"<tr><td>{escape(agent or '(unnamed)')}</td><td>{escape(mode)}</td>"
                f"<td class='num'>{total}</td><td class='num'>{hits}</td>"
                f"<td class='num'>{rate}</td></tr>"
            )
    out = [
        "<p class='note'>Disclosed: the trace audit found a hidden rule value the agent wrote, "
        "or the probe answer named one (a task: any of its episodes). A large positive "
        "difference says the passes come where the agent knew the hidden rules.</p>",
        "<table id='disclosure'><tr><th>agent</th><th>over</th><th>pass rate, disclosed</th>"
        "<th>pass rate, not disclosed</th><th>difference</th></tr>" + "".join(rows) + "</table>",
    ]
    if modes:
        out.append(
            "<h3>Disclosure per probe mode</h3><table id='probe-modes'><tr><th>agent</th>"
            "<th>probe mode</th><th>probes</th><th>disclosed</th><th>disclosure rate</th></tr>"
            + "".join(modes)
            + "</table>"
        )
    return "".join(out)


def disclosure_table(run: RunData) -> Table:
    """The terminal table of the disclosure-conditioned pass rates."""
    table = Table(
        title="Pass rate conditioned on disclosure (audit leak or probe)",
        caption=shown(draw_text(run)),
    )
    for name in ("agent", "over", "disclosed", "not disclosed", "difference", "probe modes"):
        table.add_column(name, justify="left" if name in ("agent", "over") else "right")
    for agent, split in run.disclosure.items():
        modes = ", ".join(f"{mode} {hits}/{total}" for mode, (hits, total) in split.by_mode.items())
        for number, (unit, d, u, diff) in enumerate(split.rows()):
            table.add_row(
                shown(agent or "(unnamed)") if number == 0 else "",
                unit,
                f"{_pct(d)} [dim]n={d.n}[/]",
                f"{_pct(u)} [dim]n={u.n}[/]",
                _points(diff),
                shown(modes) if number == 0 else "",
            )
    return table
