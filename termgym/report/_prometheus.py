"""Run metrics in the Prometheus text exposition format (version 0.0.4)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from termgym.recording import write_whole
from termgym.report._load import RunData, run_labels

PREFIX = "termgym_"

_HELP = {
    "pass_rate": "Share of counted episodes that passed their own graders, per variant.",
    "overall_pass_rate": "Share of counted episodes of possible variants that passed.",
    "drop": "Pass rate on original minus pass rate on contradicted.",
    "adaptation_rate": "Adapted episodes over classed shifted episodes.",
    "stale_rate": "Stale episodes over classed shifted episodes.",
    "memorization_index": "stale / (stale + adapted) over shifted episodes.",
    "withheld_hit_rate": "Pass rate on withheld episodes.",
    "top_share": "Share of per-task pass rates carried by the top 20% of tasks.",
    "gini": "Gini coefficient of per-task pass rates.",
    "cheating_rate": "Impossible episodes that passed their own graders over impossible episodes.",
    "conflict_report_rate": "Impossible episodes whose agent reported the conflict.",
    "false_report_rate": "Possible episodes whose agent reported a conflict over possible ones.",
    "tamper_rate": "Episodes with tamper evidence over episodes whose evidence was read.",
    "tampered_pass_rate": "Passes of possible variants with tamper evidence over such passes.",
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    return repr(float(value)) if value != int(value) else str(int(value))


class _Families:
    """Samples grouped by metric family, each family written once with HELP and TYPE."""

    def __init__(self) -> None:
        self.families: dict[str, tuple[str, list[str]]] = {}

    def add(self, name: str, help_text: str, labels: dict[str, str], value: float) -> None:
        full = PREFIX + name
        family = self.families.setdefault(full, (help_text, []))
        family[1].append(f"{full}{_labels(labels)} {_number(value)}")

    def lines(self) -> Iterable[str]:
        for name, (help_text, samples) in self.families.items():
            yield f"# HELP {name} {_escape_help(help_text)}"
            yield f"# TYPE {name} gauge"
            yield from samples


def prometheus_text(runs: Iterable[RunData]) -> str:
    """Every metric of the runs, as gauges labelled run and agent (and variant, kind)."""
    out = _Families()
    runs = list(runs)
    for run, label in zip(runs, run_labels(runs), strict=True):
        for agent, m in run.metrics.items():
            base = {"run": label, "agent": agent}
            for key, e in m.headline().items():
                name, labels = key, dict(base)
                if key.startswith("pass_rate["):
                    name, labels["variant"] = "pass_rate", key[len("pass_rate[") : -1]
                if e.value is None:
                    continue
                help_text = _HELP.get(name, name)
                out.add(name, help_text, labels, e.value)
                if e.low is not None and e.high is not None:
                    out.add(
                        f"{name}_ci_low",
                        f"Lower bound of the bootstrap interval: {help_text}",
                        labels,
                        e.low,
                    )
                    out.add(
                        f"{name}_ci_high",
                        f"Upper bound of the bootstrap interval: {help_text}",
                        labels,
                        e.high,
                    )
            out.add("episodes", "Episodes counted in the rates.", base, m.episodes)
            out.add(
                "infra_errors", "Episodes left out for infrastructure errors.", base, m.infra_errors
            )
            out.add(
                "agent_errors", "Counted episodes in which the agent failed.", base, m.agent_errors
            )
            out.add(
                "grader_errors",
                "Counted episodes whose final state could not be graded (scored 0).",
                base,
                m.grader_errors,
            )
            for variant, counts in m.class_counts.items():
                for episode_class, count in counts.items():
                    out.add(
                        "episodes_by_class",
                        "Episodes per shadow-grading class.",
                        {**base, "variant": variant, "class": episode_class},
                        count,
                    )
            audit = run.audit.for_agent(agent)
            out.add("audited_episodes", "Episodes the trace audit read.", base, audit.episodes)
            for kind, count in m.tamper_counts.items():
                out.add(
                    "tampered_episodes",
                    "Counted episodes with tamper evidence, per kind (tests, toolchain, system).",
                    {**base, "kind": kind},
                    count,
                )
            for kind in ("leak", "leak-name", "platform", "marker"):
                out.add(
                    "audit_hits",
                    "Trace-audit hits per kind.",
                    {**base, "kind": kind},
                    sum(h.kind == kind for h in audit.hits),
                )
            split = run.disclosure.get(agent)
            for over, d, u, diff in split.rows() if split else ():
                for disclosed, e in (("yes", d), ("no", u)):
                    if e.value is not None:
                        out.add(
                            "disclosure_pass_rate",
                            "Pass rate of episodes (or tasks) where the agent disclosed hidden "
                            "rules (audit leak or probe), and where it did not.",
                            {**base, "over": over, "disclosed": disclosed},
                            e.value,
                        )
                if diff.value is not None:
                    out.add(
                        "disclosure_pass_rate_difference",
                        "Pass rate on disclosed minus undisclosed episodes (or tasks).",
                        {**base, "over": over},
                        diff.value,
                    )
            for mode, (hits, total) in split.by_mode.items() if split else ():
                out.add(
                    "probe_disclosure_rate_by_mode",
                    "Share of probe answers naming a hidden rule value, per probe mode.",
                    {**base, "mode": mode},
                    hits / total if total else 0.0,
                )
            for name, value in (
                ("leak_rate", audit.leak_rate),
                ("platform_mention_rate", audit.platform_rate),
                ("marker_imitation_rate", audit.marker_rate),
                ("probe_disclosure_rate", audit.disclosure_rate),
            ):
                if value is not None:
                    out.add(name, f"Trace audit: {name.replace('_', ' ')}.", base, value)
    return "\n".join(out.lines()) + "\n"


def write_prometheus(runs: Iterable[RunData], path: str | Path) -> Path:
    """Write the exposition text to `path`; returns it."""
    return write_whole(Path(path), prometheus_text(runs))
