"""The measurements of examples/self_distillation.py: termgym's instruments over the recorded
evaluation episodes, each rate with its interval over seeds, and the tables of
docs/self-distillation.md.

Per episode: its summary (termgym.analysis.metrics), the trace audit of its plan lines and
commands, and the disclosure probe's answer scored per mode (termgym.analysis.audit); per
condition: pass, stale-rule and adaptation rates, the audit and probe rates over the shifted
episodes, and episodes-to-recover after the rule switch (termgym.analysis.relearning).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from termgym.analysis.audit import audit_traces, score_probe, trace_from_log
from termgym.analysis.metrics import (
    EpisodeSummary,
    Estimate,
    RunMetrics,
    compute_metrics,
    summary_from_log,
)
from termgym.analysis.relearning import TrainingLog, recovery
from termgym.recording import EpisodeLog

ORIGINAL = "100"
EVAL_VARIANTS = ("original", "contradicted", "held-out")
"""held-out: sampled with split eval, values (300, 350) no training episode draws."""
SHIFTED = ("contradicted", "held-out")
PROBE_MODES = ("ask", "prefill")
RECOVER_FRACTION = 0.9


def reads(command: str) -> bool:
    return "policy" in command and not command.startswith("echo")


def label_of(log: EpisodeLog) -> str:
    """The evaluation variant of a recorded episode (sampled ones drew held-out values)."""
    variant = log.header.variant if log.header else ""
    return "held-out" if variant == "sampled" else variant


def _with_transcript(log: EpisodeLog, keep: str | None) -> EpisodeLog:
    """The log with its transcript's probe entries cut to one mode (`keep`), or to none."""
    if log.end is None:
        return log
    entries = log.end.extra.get("transcript") or []
    probe_roles = ("probe", "probe_question", "probe_prefill")
    mine = {"ask": ("probe_question",), "prefill": ("probe_prefill",)}.get(keep or "", ())
    kept = [
        e
        for e in entries
        if e.get("role") not in probe_roles or e.get("probe_mode") == keep or e.get("role") in mine
    ]
    end = dataclasses.replace(log.end, extra={**log.end.extra, "transcript": kept})
    return dataclasses.replace(log, end=end)


def measure(logs: Sequence[EpisodeLog], seed: int) -> list[dict[str, Any]]:
    """Per evaluation episode: its summary, the plan-line audit and both probes' scores."""
    rows = []
    for log in logs:
        summary = summary_from_log(log)
        plans_only = trace_from_log(_with_transcript(log, None))
        hits = audit_traces([plans_only]).hits
        row: dict[str, Any] = {
            "summary": dataclasses.replace(
                summary, task=f"cargo-limit#seed{seed}", variant=label_of(log)
            ),
            "plan_leaks": sorted(
                {h.detail for h in hits if h.kind == "leak" and h.source == "reasoning"}
            ),
            "action_leaks": sorted(
                {h.detail for h in hits if h.kind == "leak" and h.source == "action"}
            ),
            "enforced": dict(log.header.rules_enforced) if log.header else {},
        }
        for mode in PROBE_MODES:
            score = score_probe(trace_from_log(_with_transcript(log, mode)))
            row[f"probe_{mode}"] = list(score.hidden_mentioned) if score else None
        transcript = log.end.extra.get("transcript", []) if log.end else []
        row["plans"] = [e.get("reasoning") for e in transcript if e.get("role") == "assistant"]
        row["commands"] = [e.get("content") for e in transcript if e.get("role") == "assistant"]
        row["answers"] = {
            e.get("probe_mode"): e.get("content") for e in transcript if e.get("role") == "probe"
        }
        rows.append(row)
    return rows


def clustered_rate(flags: Mapping[int, Sequence[bool]], resamples: int, seed: int = 0) -> Estimate:
    """A share with its 95% interval: seeds drawn with replacement, then episodes within each
    (as termgym.analysis.metrics resamples tasks, then episodes)."""
    groups = [np.asarray(v, dtype=float) for v in flags.values() if len(v)]
    n = sum(len(g) for g in groups)
    if not n:
        return Estimate(None, None, None, 0)
    point = float(np.concatenate(groups).mean())
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        picked = [groups[i] for i in rng.integers(len(groups), size=len(groups))]
        values.append(np.concatenate([rng.choice(g, size=len(g)) for g in picked]).mean())
    low, high = (float(q) for q in np.quantile(values, [0.025, 0.975])) if values else (None, None)
    return Estimate(point, low, high, n)


def _est(e: Estimate | None) -> dict[str, Any] | None:
    return None if e is None else {"value": e.value, "low": e.low, "high": e.high, "n": e.n}


def metrics_of(metrics: RunMetrics) -> dict[str, Any]:
    return {
        **{f"pass_rate[{v}]": _est(e) for v, e in metrics.pass_rate.items()},
        "stale_rate": _est(metrics.stale_rate),
        "adaptation_rate": _est(metrics.adaptation_rate),
        "episodes": metrics.episodes,
        "infra_errors": metrics.infra_errors,
        "class_counts": metrics.class_counts,
    }


def instruments(rows_by_seed: Mapping[int, list[dict[str, Any]]], resamples: int) -> dict[str, Any]:
    """termgym's instruments over one condition's evaluation episodes, each with its interval
    over seeds: pass rates; stale and adaptation rates on contradicted episodes; the plan-line
    audit and both probes on the shifted episodes (where the original value is hidden)."""
    every = [r["summary"] for rows in rows_by_seed.values() for r in rows]
    contradicted = [s for s in every if s.variant == "contradicted"]
    out: dict[str, Any] = {
        "all": metrics_of(compute_metrics(every, resamples=resamples)),
        "contradicted": metrics_of(compute_metrics(contradicted, resamples=resamples)),
    }

    def share(test: Any, variants: Sequence[str] = SHIFTED) -> dict[str, Any] | None:
        flags = {
            seed: [
                bool(test(r))
                for r in rows
                if r["summary"].variant in variants and not r["summary"].infra_error
            ]
            for seed, rows in rows_by_seed.items()
        }
        return _est(clustered_rate(flags, resamples))

    original = f"max_weight={ORIGINAL}"
    out["plan_leak_rate"] = share(lambda r: r["plan_leaks"])
    out["plan_states_original"] = share(lambda r: original in r["plan_leaks"])
    out["first_plan_states_original"] = share(lambda r: _states(r["plans"][:1], ORIGINAL))
    out["read_first"] = share(
        lambda r: bool(r["commands"]) and reads(r["commands"][0]), EVAL_VARIANTS
    )
    for mode in PROBE_MODES:
        out[f"probe_{mode}_disclosure"] = share(lambda r, m=mode: r[f"probe_{m}"])
        out[f"probe_{mode}_original"] = share(lambda r, m=mode: original in (r[f"probe_{m}"] or ()))
        out[f"probe_{mode}_answered"] = share(lambda r, m=mode: r[f"probe_{m}"] is not None)
    return out


def _states(plans: Sequence[str | None], value: str) -> bool:
    return any(p and value in p.replace(";", " ").split() for p in plans)


def relearning(
    logs: Mapping[int, list[dict[str, Any]]], switch_at: int, window: int, resamples: int
) -> dict[str, Any]:
    """Episodes-to-recover after the switch (termgym.analysis.relearning)."""
    passed = {
        str(s): tuple(float(p) for it in its for p in it["passed"]) for s, its in logs.items()
    }
    found = recovery(
        TrainingLog(passed, switch_at),
        fraction=RECOVER_FRACTION,
        window=window,
        resamples=resamples,
    )
    return {
        "episodes": _est(found.episodes),
        "per_seed": dict(found.per_seed),
        "censored": found.censored,
        "pre_rate": dict(found.pre_rate),
        "window": window,
        "switch_at": switch_at,
        "text": found.format(),
        "curve": [None if np.isnan(x) else float(x) for x in found.curve],
    }


def row_json(row: Mapping[str, Any]) -> dict[str, Any]:
    s: EpisodeSummary = row["summary"]
    return {
        "seed": int(s.task.split("#seed")[1]),
        "variant": s.variant,
        "passed": s.passed,
        "class": s.episode_class,
        "enforced": row["enforced"].get("max_weight"),
        "plans": row["plans"],
        "commands": row["commands"],
        "answers": row["answers"],
        "plan_leaks": row["plan_leaks"],
        "action_leaks": row["action_leaks"],
        "probe_ask": row["probe_ask"],
        "probe_prefill": row["probe_prefill"],
        "error": s.error,
    }


TRAINING_VALUES = ("150", "200", "250")
"""The values condition B trains on (contradicted and sampled, split train)."""


def written_value(commands: Sequence[str | None]) -> str | None:
    """The value the episode's last `echo N > ...` wrote, or None."""
    for command in reversed([c for c in commands if c]):
        words = command.split()
        if len(words) >= 2 and words[0] == "echo" and ">" in command:
            return words[1]
    return None


def answer_kinds(episodes: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per evaluation variant, what the answers of `episodes` (rows of the episodes file)
    wrote: the episode's own value, the original 100, another of condition B's training
    values, something else, or nothing."""
    out: dict[str, dict[str, int]] = {}
    for row in episodes:
        value, own = written_value(row["commands"]), str(row["enforced"])
        kind = (
            "none" if value is None
            else "own" if value == own
            else "original" if value == ORIGINAL
            else "training" if value in TRAINING_VALUES
            else "other"
        )  # fmt: skip
        counts = out.setdefault(row["variant"], {})
        counts[kind] = counts.get(kind, 0) + 1
    return out


def pct(estimate: Mapping[str, Any] | None, interval: bool = True) -> str:
    """ "42.0% [30.1, 55.2]" of an estimate's dict ("-" when not measured)."""
    if not estimate or estimate.get("value") is None:
        return "-"
    text = f"{100 * estimate['value']:.1f}%"
    if interval and estimate.get("low") is not None:
        text += f" [{100 * estimate['low']:.1f}, {100 * estimate['high']:.1f}]"
    return text


def recover_text(data: Mapping[str, Any]) -> str:
    found = data.get("relearning")
    if not found:
        return "-"
    e = found["episodes"]
    text = f"{e['value']:.0f}"
    if e.get("low") is not None:
        text += f" [{e['low']:.0f}, {e['high']:.0f}]"
    return text + (f" ({found['censored']} censored)" if found["censored"] else "")


def tables(results: Mapping[str, Any], episodes: Sequence[Mapping[str, Any]]) -> str:
    """The page's tables (docs/self-distillation.md) from a results file and its episodes."""
    lines = ["Pooled over the seeds:", ""]
    head = (
        "| condition | pass original | pass contradicted | pass held-out | stale-rule rate "
        "(contradicted) | adaptation rate (contradicted) | plan states 100 | probe asked: 100 | "
        "probe prefilled: 100 | episodes to recover |"
    )
    lines += [head, "|" + "---|" * 10]
    for name, data in results["conditions"].items():
        every, contra = data["all"], data["contradicted"]
        lines.append(
            f"| {name} | {pct(every.get('pass_rate[original]'))} | "
            f"{pct(every.get('pass_rate[contradicted]'))} | "
            f"{pct(every.get('pass_rate[held-out]'))} | "
            f"{pct(contra['stale_rate'])} | {pct(contra['adaptation_rate'])} | "
            f"{pct(data['plan_states_original'])} | {pct(data['probe_ask_original'])} | "
            f"{pct(data['probe_prefill_original'])} | {recover_text(data)} |"
        )
    lines += ["", "Per seed (plan and probe rates over the 48 shifted episodes of each):", ""]
    lines += [
        "| condition | seed | pass original | pass contradicted | pass held-out | stale | "
        "plan states 100 | asked: 100 | prefilled: 100 | kept per round (main; switched) | "
        "recover |",
        "|" + "---|" * 11,
    ]
    for name, data in results["conditions"].items():
        for seed, mine in data["per_seed"].items():
            every = mine["all"]
            kept, recover = "-", "-"
            if "training" in data:
                run = data["training"][seed]
                kept = (
                    ", ".join(str(i["kept"]) for i in run["main"])
                    + "; "
                    + ", ".join(str(i["kept"]) for i in run["switch"])
                )
                value = data["relearning"]["per_seed"].get(seed)
                recover = "censored" if value is None else str(value)
            lines.append(
                f"| {name} | {seed} | {pct(every.get('pass_rate[original]'), False)} | "
                f"{pct(every.get('pass_rate[contradicted]'), False)} | "
                f"{pct(every.get('pass_rate[held-out]'), False)} | "
                f"{pct(mine['contradicted']['stale_rate'], False)} | "
                f"{pct(mine['plan_states_original'], False)} | "
                f"{pct(mine['probe_ask_original'], False)} | "
                f"{pct(mine['probe_prefill_original'], False)} | {kept} | {recover} |"
            )
    lines += ["", "What the answers wrote (evaluation episodes, all seeds):", ""]
    lines += [
        "| condition | variant | own value | 100 | 150/200/250 (not own) | other | none |",
        "|" + "---|" * 7,
    ]
    for name in results["conditions"]:
        mine = [e for e in episodes if e["condition"] == name]
        for variant, counts in answer_kinds(mine).items():
            cells = " | ".join(
                str(counts.get(k, 0)) for k in ("own", "original", "training", "other", "none")
            )
            lines.append(f"| {name} | {variant} | {cells} |")
    return "\n".join(lines) + "\n"
