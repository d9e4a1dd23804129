"""Values grading produces: per-grader results, verdicts per rule set, the episode's report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from termgym._vocabulary import EpisodeClass, ShadowClass
from termgym.grading._inputs import ProgramStart


@dataclass(frozen=True)
class GraderResult:
    """One grader's judgement under one rule set.

    `error` is set (and `score`/`passed` are None) when the grader crashed or timed out on
    the agent's final state: the episode is then a grader-error, scored 0.
    """

    grader: str
    kind: str
    ruleset: str
    score: float | None
    passed: bool | None
    weight: float = 1.0
    message: str = ""
    duration: float = 0.0
    error: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    starts: tuple[ProgramStart, ...] = ()
    """What each program this grader started as the agent's user was given (recorded only
    when the grading was asked to: `termgym check`; not part of `to_dict`)."""
    input_problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "grader": self.grader,
            "kind": self.kind,
            "ruleset": self.ruleset,
            "score": self.score,
            "passed": self.passed,
            "weight": self.weight,
            "message": self.message,
            "duration": round(self.duration, 4),
            "error": self.error,
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class Verdict:
    """All graders of one rule set on one final state: passed when every grader passed."""

    ruleset: str
    rules: Mapping[str, Any]
    results: tuple[GraderResult, ...]

    @property
    def error(self) -> str | None:
        """Infrastructure errors of this rule set's graders, joined; None when all ran."""
        errors = [f"{r.grader}: {r.error}" for r in self.results if r.error]
        return "; ".join(errors) or None

    @property
    def passed(self) -> bool | None:
        """Every grader passed (None when a grader could not run)."""
        if self.error:
            return None
        return all(r.passed for r in self.results)

    @property
    def score(self) -> float | None:
        """Weighted mean of the graders' scores (None when a grader could not run)."""
        if self.error:
            return None
        total = sum(r.weight for r in self.results)
        if total == 0:
            return 1.0 if self.passed else 0.0
        return sum((r.score or 0.0) * r.weight for r in self.results) / total

    def to_dict(self) -> dict[str, Any]:
        return {
            "ruleset": self.ruleset,
            "rules": dict(self.rules),
            "passed": self.passed,
            "score": self.score,
            "error": self.error,
            "results": [r.to_dict() for r in self.results],
        }


def classify(new_passed: bool | None, old_passed: bool | None) -> ShadowClass | None:
    """Class of an episode from its own verdict (new rules) and the original's (old rules).

    adapted: passes the new rules, fails the old. stale: passes the old, fails the new (it
    followed the internalized rule). both / neither. None when either verdict is unknown.
    """
    if new_passed is None or old_passed is None:
        return None
    if new_passed and old_passed:
        return "both"
    if new_passed:
        return "adapted"
    if old_passed:
        return "stale"
    return "neither"


@dataclass(frozen=True)
class GradeReport:
    """How one episode's final state was judged.

    Attributes:
        variant: The episode's variant.
        own: Name of the episode's own rule set in `verdicts` (the variant's name).
        verdicts: Rule-set name -> Verdict: the episode's own and the shadow ones (original
            and every other variant that applies). The verdict matrix is
            `{name: {grader: passed}}`, see `matrix`.
        episode_class: adapted / stale / both / neither; None for original episodes.
        timings: Seconds spent: "freeze", "inject", "run" (the in-sandbox exec), "total".
    """

    variant: str
    own: str
    verdicts: Mapping[str, Verdict]
    episode_class: ShadowClass | None
    timings: Mapping[str, float] = field(default_factory=dict)

    @property
    def verdict(self) -> Verdict:
        """The episode's own verdict (its variant's rules and graders)."""
        return self.verdicts[self.own]

    @property
    def passed(self) -> bool | None:
        return self.verdict.passed

    @property
    def score(self) -> float | None:
        return self.verdict.score

    @property
    def errors(self) -> list[str]:
        """Infrastructure errors of any rule set, prefixed by the rule set's name."""
        return [f"{name}: {v.error}" for name, v in self.verdicts.items() if v.error]

    @property
    def why(self) -> str:
        """Each distinct grader error once, with the rule sets it hit (for messages)."""
        hits: dict[str, list[str]] = {}
        for name, verdict in self.verdicts.items():
            for result in verdict.results:
                if result.error:
                    hits.setdefault(f"{result.grader}: {result.error}", []).append(name)
        return " | ".join(f"[{', '.join(sets)}] {text}" for text, sets in hits.items())

    @property
    def matrix(self) -> dict[str, dict[str, bool | None]]:
        """Rule set -> grader -> passed."""
        return {name: {r.grader: r.passed for r in v.results} for name, v in self.verdicts.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "own": self.own,
            "class": self.episode_class,
            "passed": self.passed,
            "score": self.score,
            "verdicts": {n: v.to_dict() for n, v in self.verdicts.items()},
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
        }


__all__ = ["EpisodeClass", "GradeReport", "GraderResult", "ShadowClass", "Verdict", "classify"]
