"""The regression gate: compare a candidate run with a base run, metric by metric."""

from __future__ import annotations

from dataclasses import dataclass

from termgym.analysis.metrics import (
    EpisodeSummary,
    Estimate,
    RunMetrics,
    compute_metrics,
    order_variants,
)
from termgym.report._load import RunData
from termgym.report._paired import PAIRINGS, paired_change

DECISIONS = ("threshold", "bootstrap")
_NO_EPISODES = "the candidate run has no episodes of this agent"
_NO_BASE = "the base run has no episodes: nothing to compare the candidate with"
_NOTHING_COMPARED = "no pass rate measured in both runs (no task and variant both ran)"
__all__ = ["DECISIONS", "PAIRINGS", "Check", "compare_runs", "parse_fraction"]


@dataclass(frozen=True)
class Check:
    """One comparison of the gate.

    Attributes:
        agent: The agent compared ("base -> candidate" when the names differ).
        metric: "pass_rate[<variant>]", "overall_pass_rate" or "memorization_index"; or what
            a check of the runs' scope is about: "episodes", "tasks", "pass rates".
        base: The base run's estimate.
        candidate: The candidate run's estimate.
        limit: The largest change tolerated in the bad direction.
        regressed: The change went past the limit in the bad direction (with the bootstrap
            decision: and its paired interval lies wholly below zero).
        note: Why the check could not be made, or "".
        paired: The paired bootstrap's estimate of the change (decision "bootstrap"), or None.
    """

    agent: str
    metric: str
    base: Estimate
    candidate: Estimate
    limit: float
    regressed: bool
    note: str = ""
    paired: Estimate | None = None

    @property
    def change(self) -> float | None:
        """Candidate minus base (None when either is undefined)."""
        if self.base.value is None or self.candidate.value is None:
            return None
        return self.candidate.value - self.base.value

    def describe(self) -> str:
        """A line saying what regressed, e.g. "oracle pass_rate[contradicted] fell 40.0 pts"."""
        if self.note:
            return f"{self.agent} {self.metric}: {self.note}"
        change = self.change or 0.0
        verb = "rose" if change > 0 else "fell"
        noise = ""
        if self.paired is not None and self.paired.low is not None and self.paired.high is not None:
            noise = (
                f"; paired change {self.paired.value * 100:+.1f} "  # type: ignore[operator]
                f"[{self.paired.low * 100:+.1f}, {self.paired.high * 100:+.1f}] "
                f"over {self.paired.n} pairs"
            )
        return (
            f"{self.agent} {self.metric} {verb} {abs(change) * 100:.1f} points "
            f"({self.base.format()} -> {self.candidate.format()}; "
            f"limit {self.limit * 100:.1f}{noise})"
        )


def _pairs(
    base: RunData, candidate: RunData
) -> list[tuple[str, RunMetrics, RunMetrics, tuple[str, str]]]:
    common = [a for a in base.metrics if a in candidate.metrics]
    if common:
        return [(a, base.metrics[a], candidate.metrics[a], (a, a)) for a in common]
    if len(base.metrics) == 1 and len(candidate.metrics) == 1:
        (a, m), (b, n) = next(iter(base.metrics.items())), next(iter(candidate.metrics.items()))
        return [(f"{a} -> {b}", m, n, (a, b))]
    return []


def compare_runs(
    base: RunData,
    candidate: RunData,
    *,
    max_drop: float,
    max_rise: float | None = None,
    decision: str = "threshold",
    paired: str = "episodes",
    resamples: int = 2000,
    seed: int | None = 0,
) -> list[Check]:
    """Every check of the gate.

    A pass rate (per variant, and over all variants) regresses when it falls by more than
    `max_drop`; the memorization index regresses when it rises by more than `max_rise`
    (default: `max_drop`). A candidate without counted episodes, or with none of an agent or
    a task the base has, regresses too, and so does any candidate of a base without counted
    episodes, or of a base and a candidate without one pass rate both measured (a gate with
    nothing to compare fails). Rates are compared over the (task, variant) pairs both runs
    have.

    With `decision="bootstrap"`, a pass rate regresses only when, besides falling by more
    than `max_drop`, the paired bootstrap interval of its change (pairs of `paired`:
    "episodes" or "tasks", termgym/report/_paired.py) lies wholly below zero: a fall that
    noise explains does not fail the gate. The memorization index keeps the point decision.
    """
    if decision not in DECISIONS:
        raise ValueError(f"decision: expected one of {', '.join(DECISIONS)}, found {decision!r}")
    max_rise = max_drop if max_rise is None else max_rise
    pairs = _pairs(base, candidate)
    empty = Estimate(None, None, None, 0)
    if not base.metrics:
        return [Check("(any)", "episodes", empty, empty, 0.0, True, _NO_BASE)]
    if not pairs:
        return [
            Check(
                a,
                "episodes",
                empty,
                empty,
                0.0,
                True,
                _NO_EPISODES,
            )
            for a in base.metrics
        ]
    checks: list[Check] = [
        Check(a, "episodes", m.overall_pass_rate, empty, 0.0, True, _NO_EPISODES)
        for a, m in base.metrics.items()
        if a not in {names[0] for *_, names in pairs}
    ]
    for agent, b, c, names in pairs:
        if b.episodes == 0:
            checks.append(
                Check(
                    agent,
                    "episodes",
                    b.overall_pass_rate,
                    c.overall_pass_rate,
                    0.0,
                    True,
                    f"the base has no counted episode ({b.infra_errors} infrastructure errors): "
                    "nothing to compare the candidate with",
                )
            )
            continue
        if c.episodes == 0:
            checks.append(
                Check(
                    agent,
                    "episodes",
                    b.overall_pass_rate,
                    c.overall_pass_rate,
                    0.0,
                    True,
                    "the candidate has no counted episode "
                    f"({c.infra_errors} infrastructure errors)",
                )
            )
            continue
        scope = _common_scope(base, candidate, names, agent, (b, c))
        checks.extend(scope.checks)
        metrics = [f"pass_rate[{v}]" for v in order_variants(b.pass_rate)] + ["overall_pass_rate"]
        whole, b, c = b, scope.base, scope.candidate
        compared = False
        for name in metrics:
            # a variant the candidate lacks (on the base's tasks) shows the base's whole rate
            be = b.headline().get(name, whole.headline()[name])
            ce = c.headline().get(name, empty)
            if be.value is None:
                continue
            if ce.value is None:
                checks.append(
                    Check(agent, name, be, ce, max_drop, False, "not measured in the candidate")
                )
                continue
            compared = True
            fell = be.value - ce.value > max_drop + 1e-12
            if decision == "threshold":
                checks.append(Check(agent, name, be, ce, max_drop, fell))
                continue
            change = paired_change(
                scope.base_episodes,
                scope.candidate_episodes,
                agents=names,
                metric=name,
                paired=paired,
                resamples=resamples,
                seed=seed,
            )
            if change.value is None:
                note = f"no {paired} in both runs to pair"
                checks.append(Check(agent, name, be, ce, max_drop, fell, note, change))
                continue
            beyond_noise = change.high is not None and change.high < 0
            checks.append(Check(agent, name, be, ce, max_drop, fell and beyond_noise, "", change))
        if not compared:  # a gate that compared nothing has not found the candidate sound
            checks.append(
                Check(agent, "pass rates", empty, empty, max_drop, True, _NOTHING_COMPARED)
            )
        be, ce = b.memorization_index, c.memorization_index
        if be.value is not None and ce.value is not None:
            checks.append(
                Check(
                    agent,
                    "memorization_index",
                    be,
                    ce,
                    max_rise,
                    ce.value - be.value > max_rise + 1e-12,
                )
            )
        elif ce.value is not None:
            checks.append(
                Check(
                    agent, "memorization_index", be, ce, max_rise, False, "not measured in the base"
                )
            )
    return checks


def _cells(run: RunData, agent: str) -> set[tuple[str, str]]:
    """The (task, variant) pairs the agent has counted episodes of in the run."""
    return {(s.task, s.variant) for s in run.summaries if s.agent == agent and not s.infra_error}


@dataclass(frozen=True)
class _Scope:
    """What the gate compares of one agent: both runs over the (task, variant) pairs both
    counted episodes of, and the checks saying what was left out."""

    base: RunMetrics
    candidate: RunMetrics
    base_episodes: tuple[EpisodeSummary, ...]
    candidate_episodes: tuple[EpisodeSummary, ...]
    checks: tuple[Check, ...]


def _common_scope(
    base: RunData,
    candidate: RunData,
    names: tuple[str, str],
    label: str,
    metrics: tuple[RunMetrics, RunMetrics],
) -> _Scope:
    """Both runs' metrics over the (task, variant) pairs both counted episodes of.

    A rate over other tasks or variants is not the same rate: a candidate without the base's
    hard task (or variant) would look better by leaving it out. A base task the candidate
    lacks regresses, as an agent it lacks does; a task only the candidate has is left out,
    and said so.
    """
    mine, theirs = _cells(base, names[0]), _cells(candidate, names[1])
    common = mine & theirs
    ours = tuple(s for s in base.summaries if s.agent == names[0])
    their = tuple(s for s in candidate.summaries if s.agent == names[1])
    if mine == theirs:
        return _Scope(*metrics, ours, their, ())
    tasks = ({t for t, _ in mine}, {t for t, _ in theirs}, {t for t, _ in common})
    counts = (Estimate(None, None, None, len(tasks[0])), Estimate(None, None, None, len(tasks[1])))
    both = f"rates compared over the {len(tasks[2])} both have"
    checks = []
    if missing := sorted(tasks[0] - tasks[1]):
        said = f"the candidate has no counted episode of {len(missing)} task(s) of the base"
        checks.append(
            Check(label, "tasks", *counts, 0.0, True, f"{said} ({', '.join(missing)}); {both}")
        )
    if extra := sorted(tasks[1] - tasks[0]):
        said = f"{len(extra)} task(s) only the candidate has left out ({', '.join(extra)})"
        checks.append(Check(label, "tasks", *counts, 0.0, False, f"{said}; {both}"))
    ours = tuple(s for s in ours if (s.task, s.variant) in common)
    their = tuple(s for s in their if (s.task, s.variant) in common)

    def over(episodes: tuple[EpisodeSummary, ...], m: RunMetrics) -> RunMetrics:
        return compute_metrics(
            episodes, resamples=m.resamples, confidence=m.confidence, seed=m.seed
        )

    return _Scope(over(ours, metrics[0]), over(their, metrics[1]), ours, their, tuple(checks))


def parse_fraction(text: str) -> float:
    """ "0.05", "5%" -> 0.05; raises ValueError otherwise."""
    text = text.strip()
    value = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"expected a fraction in [0, 1] or a percentage, found {text!r}")
    return value
