"""Rates over a framework's episodes, by `termgym.analysis`'s one definition of each metric.

A framework hands back per-episode metric dicts (SkyRL's `get_metrics`); they are read as
`termgym.analysis.EpisodeSummary` and aggregated by `compute_metrics`, so the stale-rule and
adaptation rates are the report's own: shifted episodes are those whose enforced values
differ from the authored ones (a withheld episode enforces the authored values, so it is
not one), and infrastructure errors are left out of every rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from termgym._vocabulary import GRADER_ERROR
from termgym.analysis.metrics import EpisodeSummary, compute_metrics

HEADLINE = (
    "overall_pass_rate",
    "adaptation_rate",
    "stale_rate",
    "memorization_index",
    "drop",
    "withheld_hit_rate",
    "cheating_rate",
    "conflict_report_rate",
    "false_report_rate",
    "tamper_rate",
)
"""The scalar metrics reported, under their `termgym.analysis` names."""


def episode_metrics(meta: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """One episode's metrics from its `grading_metadata`: what `EpisodeSummary` reads, plus
    the trainer's flags (stale, adapted, grader_error, infra_error) and `extra`."""
    return {
        "task": meta.get("task_id"),
        "variant": meta.get("variant"),
        "class": meta.get("class"),
        "reward": float(meta.get("reward") or 0.0),
        "passed": bool(meta.get("passed")),
        "rules_changed": meta.get("rules_changed"),
        "error": meta.get("error"),
        "stale": bool(meta.get("stale")),
        "adapted": bool(meta.get("adapted")),
        "grader_error": bool(meta.get("grader_error")),
        "infra_error": bool(meta.get("infra_error")),
        "conflict_reported": bool(meta.get("conflict_reported")),
        "tampered": meta.get("tampered"),
        "tamper_kinds": list(meta.get("tamper_kinds") or []),
        **extra,
    }


def aggregate(metrics: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The run's rates over episode metrics (numbers only; an undefined rate is left out).

    Keys: episodes, infra_errors, reward (mean over counted episodes), grader_error_rate,
    pass_rate (counted episodes of possible variants), pass_rate/<variant>, and
    adaptation_rate, stale_rate, memorization_index, drop, withheld_hit_rate,
    cheating_rate, conflict_report_rate, false_report_rate, tamper_rate as
    `termgym.analysis.compute_metrics` defines them (docs/metrics.md).
    """
    summaries = [_summary(m) for m in metrics]
    result = compute_metrics(summaries, resamples=0)
    counted = [s for s in summaries if not s.infra_error]
    out: dict[str, float] = {
        "episodes": float(result.episodes),
        "infra_errors": float(result.infra_errors),
    }
    if counted:
        out["reward"] = sum(s.reward for s in counted) / len(counted)
        out["grader_error_rate"] = result.grader_errors / len(counted)
    for name in HEADLINE:
        value = getattr(result, name).value
        if value is not None:
            out["pass_rate" if name == "overall_pass_rate" else name] = value
    for variant, estimate in result.pass_rate.items():
        if estimate.value is not None:
            out[f"pass_rate/{variant}"] = estimate.value
    return out


def _summary(metric: Mapping[str, Any]) -> EpisodeSummary:
    data = dict(metric)
    if data.get("variant") is None:  # never graded: set apart, as a crashed recording is
        data.update(variant="unknown", error=data.get("error") or "not graded")
    elif data.get("infra_error"):
        data["error"] = data.get("error") or "infrastructure error"
    elif data.get("class") != GRADER_ERROR:
        data["error"] = None  # only an infrastructure error sets an episode apart
    return EpisodeSummary.from_dict(data)
