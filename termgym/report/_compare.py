"""The regression gate: compare a candidate run with a base run, metric by metric."""

from __future__ import annotations

from dataclasses import dataclass

from termgym.analysis.metrics import Estimate, RunMetrics, order_variants
from termgym.report._load import RunData


@dataclass(frozen=True)
class Check:
    """One comparison of the gate.

    Attributes:
        agent: The agent compared ("base -> candidate" when the names differ).
        metric: "pass_rate[<variant>]", "overall_pass_rate" or "memorization_index".
        base: The base run's estimate.
        candidate: The candidate run's estimate.
        limit: The largest change tolerated in the bad direction.
        regressed: The change went past the limit in the bad direction.
        note: Why the check could not be made, or "".
    """

    agent: str
    metric: str
    base: Estimate
    candidate: Estimate
    limit: float
    regressed: bool
    note: str = ""

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
        return (
            f"{self.agent} {self.metric} {verb} {abs(change) * 100:.1f} points "
            f"({self.base.format()} -> {self.candidate.format()}; "
            f"limit {self.limit * 100:.1f})"
        )


def _pairs(base: RunData, candidate: RunData) -> list[tuple[str, RunMetrics, RunMetrics]]:
    common = [a for a in base.metrics if a in candidate.metrics]
    if common:
        return [(a, base.metrics[a], candidate.metrics[a]) for a in common]
    if len(base.metrics) == 1 and len(candidate.metrics) == 1:
        (a, m), (b, n) = next(iter(base.metrics.items())), next(iter(candidate.metrics.items()))
        return [(f"{a} -> {b}", m, n)]
    return []


def compare_runs(
    base: RunData, candidate: RunData, *, max_drop: float, max_rise: float | None = None
) -> list[Check]:
    """Every check of the gate.

    A pass rate (per variant, and over all variants) regresses when it falls by more than
    `max_drop`; the memorization index regresses when it rises by more than `max_rise`
    (default: `max_drop`). A candidate without counted episodes, or with none of an agent the
    base has, regresses too.
    """
    max_rise = max_drop if max_rise is None else max_rise
    pairs = _pairs(base, candidate)
    empty = Estimate(None, None, None, 0)
    if not pairs:
        return [
            Check(
                a,
                "episodes",
                empty,
                empty,
                0.0,
                True,
                "the candidate run has no episodes of this agent",
            )
            for a in list(base.metrics) or ["(any)"]
        ]
    checks: list[Check] = []
    for agent, b, c in pairs:
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
        metrics = [f"pass_rate[{v}]" for v in order_variants(b.pass_rate)] + ["overall_pass_rate"]
        for name in metrics:
            be, ce = b.headline()[name], c.headline().get(name, empty)
            if be.value is None:
                continue
            if ce.value is None:
                checks.append(
                    Check(agent, name, be, ce, max_drop, False, "not measured in the candidate")
                )
                continue
            checks.append(
                Check(agent, name, be, ce, max_drop, be.value - ce.value > max_drop + 1e-12)
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


def parse_fraction(text: str) -> float:
    """ "0.05", "5%" -> 0.05; raises ValueError otherwise."""
    text = text.strip()
    value = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"expected a fraction in [0, 1] or a percentage, found {text!r}")
    return value
