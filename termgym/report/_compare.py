"""The regression gate: compare a candidate run with a base run, metric by metric."""

from __future__ import annotations

from dataclasses import dataclass

from termgym.analysis.metrics import (
    IMPOSSIBLE_VARIANTS,
    Direction,
    EpisodeSummary,
    Estimate,
    RunMetrics,
    compute_metrics,
    direction,
    order_variants,
)
from termgym.report._load import RunData
from termgym.report._paired import PAIRINGS, pairable, paired_change

DECISIONS = ("threshold", "bootstrap")
_NO_EPISODES = "the candidate run has no episodes of this agent"
_NO_BASE = "the base run has no episodes: nothing to compare the candidate with"
_NOTHING_COMPARED = "no rate measured in both runs (no task and variant both ran)"
GATED: tuple[str, ...] = (
    "overall_pass_rate",
    "adaptation_rate",
    "stale_rate",
    "memorization_index",
    "cheating_rate",
    "conflict_report_rate",
    "false_report_rate",
    "tamper_rate",
    "tampered_pass_rate",
)
"""What the gate compares besides the pass rate of each possible variant, in its table's
order; each regresses the way `termgym.analysis.metrics.direction` says is worse.
`pass_rate[impossible]` is compared once, as the cheating rate it is."""
_OF_A_VARIANT = frozenset({"cheating_rate", "conflict_report_rate"})
"""Gated rates over one variant's episodes (impossible), shown like that variant's pass rate."""
__all__ = ["DECISIONS", "GATED", "PAIRINGS", "Check", "compare_runs", "parse_fraction"]


@dataclass(frozen=True)
class Check:
    """One comparison of the gate.

    Attributes:
        agent: The agent compared ("base -> candidate" when the names differ).
        metric: "pass_rate[<variant>]" or a metric of GATED; or what a check of the runs'
            scope is about: "episodes", "tasks", "pass rates".
        base: The base run's estimate.
        candidate: The candidate run's estimate.
        limit: The largest change tolerated in the bad direction (for a two-sided metric:
            in the direction it moved).
        regressed: The change went past the limit in the bad direction (with the bootstrap
            decision: and its paired interval lies wholly on that side of zero).
        note: Why the check could not be made, or "".
        paired: The paired bootstrap's estimate of the change (decision "bootstrap"), or None.
        direction: Which way the metric is better ("higher" for the scope checks).
    """

    agent: str
    metric: str
    base: Estimate
    candidate: Estimate
    limit: float
    regressed: bool
    note: str = ""
    paired: Estimate | None = None
    direction: Direction = "higher"

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
        better = "two-sided" if self.direction == "two-sided" else f"{self.direction} is better"
        return (
            f"{self.agent} {self.metric} {verb} {abs(change) * 100:.1f} points "
            f"({better}; {self.base.format()} -> {self.candidate.format()}; "
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

    Every metric compared (the pass rate of each possible variant, and GATED) has a direction
    (`termgym.analysis.metrics.direction`): one that is better higher (a pass rate, the
    adaptation and conflict-report rates) regresses when it falls by more than `max_drop`;
    one that is better lower (the stale-rule, cheating, false-report and tamper rates, the
    memorization index) when it rises by more than `max_rise` (default: `max_drop`); a
    two-sided one (the withheld pass rate) when it does either. A candidate without counted
    episodes, or with none of an agent or a task the base has, regresses too, and so does
    any candidate of a base without counted
    episodes, or of a base and a candidate without one rate both measured (a gate with
    nothing to compare fails). Rates are compared over the (task, variant) pairs both runs
    have.

    With `decision="bootstrap"`, a rate regresses only when, besides moving past its limit
    the wrong way, the paired bootstrap interval of its change (pairs of `paired`:
    "episodes" or "tasks", termgym/report/_paired.py) lies wholly on that side of zero: a
    move that noise explains does not fail the gate. The memorization index and the
    tampered-pass rate, whose episodes depend on the outcome, keep the point decision.
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
        possible = [v for v in order_variants(b.pass_rate) if v not in IMPOSSIBLE_VARIANTS]
        metrics = [f"pass_rate[{v}]" for v in possible] + list(GATED)
        whole, b, c = b, scope.base, scope.candidate
        compared = False
        for name in metrics:
            be = b.headline().get(name, empty)
            if be.value is None and (name.startswith("pass_rate[") or name in _OF_A_VARIANT):
                # a variant the candidate lacks (on the base's tasks) shows the base's whole
                # rate, and is said not to be measured in the candidate
                be = whole.headline().get(name, empty)
            ce = c.headline().get(name, empty)
            if be.value is None and ce.value is None:
                continue
            way = direction(name)
            if be.value is None or ce.value is None:
                which = "base" if be.value is None else "candidate"
                limit = max_drop if way == "higher" else max_rise
                note = f"not measured in the {which}"
                checks.append(Check(agent, name, be, ce, limit, False, note, direction=way))
                continue
            compared = True
            change = ce.value - be.value
            worse, limit = _worse(way, change, max_drop, max_rise)
            if decision == "threshold" or not pairable(name):
                checks.append(Check(agent, name, be, ce, limit, worse, direction=way))
                continue
            moved = paired_change(
                scope.base_episodes,
                scope.candidate_episodes,
                agents=names,
                metric=name,
                paired=paired,
                resamples=resamples,
                seed=seed,
            )
            if moved.value is None:
                note = f"no {paired} in both runs to pair"
                checks.append(Check(agent, name, be, ce, limit, worse, note, moved, way))
                continue
            checks.append(
                Check(agent, name, be, ce, limit, worse and _beyond_noise(change, moved), "",
                      moved, way)
            )  # fmt: skip
        if not compared:  # a gate that compared nothing has not found the candidate sound
            checks.append(Check(agent, "rates", empty, empty, max_drop, True, _NOTHING_COMPARED))
    return checks


def _worse(way: Direction, change: float, max_drop: float, max_rise: float) -> tuple[bool, float]:
    """Whether `change` (candidate - base) went past its limit in the direction `way` calls
    worse, and that limit: a fall of a higher-is-better metric past `max_drop`, a rise of a
    lower-is-better one past `max_rise`; a two-sided metric either."""
    if way == "higher" or (way == "two-sided" and change < 0):
        return -change > max_drop + 1e-12, max_drop
    return change > max_rise + 1e-12, max_rise


def _beyond_noise(change: float, paired: Estimate) -> bool:
    """The paired interval of the change lies wholly on the side the point estimate moved:
    noise does not explain the move."""
    if change < 0:
        return paired.high is not None and paired.high < 0
    return paired.low is not None and paired.low > 0


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
