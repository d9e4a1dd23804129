"""Values grading produces: per-grader results, verdicts per rule set, the episode's report."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from termgym._vocabulary import CLASSES, INFRA_ERROR, SHADOW_CLASSES, EpisodeClass, ShadowClass
from termgym.errors import RecordingError
from termgym.grading._starts import ProgramStart


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

    @classmethod
    def from_dict(cls, data: Any, where: str = "grader result") -> GraderResult:
        """Read the form `to_dict` writes (a recording's); missing fields take defaults.

        Raises:
            RecordingError: `data` is not a mapping or a field has the wrong type; the
                message names `where`, the field, what was expected and what was found.
        """
        data = _mapping(data, where, "a grader result mapping")
        score = _field(data, "score", (int, float), where, "a number or null", None)
        weight = _field(data, "weight", (int, float), where, "a number", 1.0)
        return cls(
            grader=_field(data, "grader", str, where, "the grader's name", "?"),
            kind=_field(data, "kind", str, where, "a grader kind", ""),
            ruleset=_field(data, "ruleset", str, where, "a rule-set name", ""),
            score=None if score is None else float(score),
            passed=_field(data, "passed", bool, where, "true, false or null", None),
            weight=float(weight),
            message=_field(data, "message", str, where, "text", ""),
            duration=float(_field(data, "duration", (int, float), where, "seconds", 0.0)),
            error=_field(data, "error", str, where, "text or null", None),
            details=_field(data, "details", Mapping, where, "a mapping", {}),
        )


@dataclass(frozen=True)
class RecordedOutcome:
    """A verdict's pass, score and error as a recording wrote them (see `Verdict.recorded`)."""

    passed: bool | None
    score: float | None
    error: str | None
    has_rules: bool = True
    """The recording wrote the rule set's values (older ones did not)."""


@dataclass(frozen=True)
class Verdict:
    """All graders of one rule set on one final state: passed when every grader passed.

    `recorded` is set on a verdict read back from a recording (`from_dict`): its pass, score
    and error are then the ones written, not recomputed from `results` (recordings written
    before the results were kept have none).
    """

    ruleset: str
    rules: Mapping[str, Any]
    results: tuple[GraderResult, ...]
    recorded: RecordedOutcome | None = None

    @property
    def rules_known(self) -> bool:
        """`rules` are the rule set's values (False: read from a recording without them)."""
        return self.recorded is None or self.recorded.has_rules

    @property
    def error(self) -> str | None:
        """Infrastructure errors of this rule set's graders, joined; None when all ran."""
        if self.recorded is not None:
            return self.recorded.error
        errors = [f"{r.grader}: {r.error}" for r in self.results if r.error]
        return "; ".join(errors) or None

    @property
    def passed(self) -> bool | None:
        """Every grader passed (None when a grader could not run)."""
        if self.recorded is not None:
            return self.recorded.passed
        if self.error:
            return None
        return all(r.passed for r in self.results)

    @property
    def score(self) -> float | None:
        """Weighted mean of the graders' scores (None when a grader could not run)."""
        if self.recorded is not None:
            return self.recorded.score
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

    @classmethod
    def from_dict(cls, name: str, data: Any, where: str = "verdict") -> Verdict:
        """Read the form `to_dict` writes, or an older recording's {"passed", "score", ...}.

        Raises:
            RecordingError: `data` is not a verdict (neither "passed" nor "results"), or a
                field has the wrong type; the message names `where` and the field.
        """
        data = _mapping(data, where, 'a verdict mapping with "passed" or "results"')
        if "passed" not in data and "results" not in data:
            raise RecordingError(
                f'{where}: expected a verdict with "passed" or "results", found the keys '
                f"{sorted(data)}"
            )
        results = _field(data, "results", list, where, "a list of grader results", [])
        parsed = tuple(
            GraderResult.from_dict(r, f"{where}.results[{i}]") for i, r in enumerate(results)
        )
        verdict = cls(
            ruleset=_field(data, "ruleset", str, where, "a rule-set name", name),
            rules=_field(data, "rules", Mapping, where, "a mapping of rule -> value", {}),
            results=parsed,
        )
        if "passed" not in data and "rules" in data:
            return verdict  # pass, score and error follow from the results
        score = _field(data, "score", (int, float), where, "a number or null", None)
        passed = _field(data, "passed", bool, where, "true, false or null", None)
        if data.get("known") is False:  # an env's info: False and 0.0 stand for none there
            passed = score = None
        outcome = RecordedOutcome(
            passed=passed,
            score=None if score is None else float(score),
            error=_field(data, "error", str, where, "text or null", None),
            has_rules="rules" in data,
        )
        if "passed" not in data:  # pass, score and error follow from the results
            outcome = RecordedOutcome(verdict.passed, verdict.score, verdict.error, False)
        return Verdict(verdict.ruleset, verdict.rules, verdict.results, outcome)


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
        isolation: Which of the verifier's defences did not hold in this grading (the runner
            dumpable, no nests for the agent's programs, the tests loading code of the
            agent's: docs/security.md); empty when all did. A verdict with gaps is shown
            apart.
        filesystem: What the graders saw: "work" (the clean image and the work) or
            "snapshot" (the agent's whole final filesystem, `grading.filesystem`).
    """

    variant: str
    own: str
    verdicts: Mapping[str, Verdict]
    episode_class: ShadowClass | None
    timings: Mapping[str, float] = field(default_factory=dict)
    isolation: tuple[str, ...] = ()
    filesystem: str = "work"

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
            **({"isolation": list(self.isolation)} if self.isolation else {}),
            **({"filesystem": self.filesystem} if self.filesystem != "work" else {}),
        }

    @classmethod
    def from_wire(
        cls,
        verdicts: Any,
        *,
        variant: str,
        episode_class: str | None,
        where: str = "verdicts",
    ) -> GradeReport:
        """Read a recording's verdicts (an end line's, or `to_dict()["verdicts"]`) back.

        `variant` names the episode's own rule set; `episode_class` is the end line's class
        (a shadow class is kept; "grader-error", "error" and None give None here).

        Raises:
            RecordingError: the verdicts are not a mapping of rule set -> verdict, or one
                is malformed; the message says where (`where`, e.g. "<file>: line 7").
        """
        verdicts = _mapping(verdicts, where, "verdicts: a mapping of rule set -> verdict")
        if episode_class is not None and episode_class not in (*CLASSES, INFRA_ERROR):
            raise RecordingError(
                f"{where}: expected an episode class (one of {', '.join(CLASSES)}, "
                f"{INFRA_ERROR} or null), found {episode_class!r}"
            )
        parsed = {
            str(name): Verdict.from_dict(str(name), v, f"{where}: verdicts[{str(name)!r}]")
            for name, v in verdicts.items()
        }
        shadow = next((c for c in SHADOW_CLASSES if c == episode_class), None)
        return cls(variant=variant, own=variant, verdicts=parsed, episode_class=shadow)

    @property
    def own_verdict(self) -> Verdict | None:
        """The episode's own verdict, or None when the recording has none for its variant."""
        return self.verdicts.get(self.own)


def _mapping(data: Any, where: str, expected: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise RecordingError(f"{where}: expected {expected}, found {_shown(data)}")
    return data


def _field(
    data: Mapping[str, Any],
    name: str,
    kinds: type | tuple[type, ...],
    where: str,
    expected: str,
    default: Any,
) -> Any:
    """`data[name]` when it has one of `kinds` (null: `default`); else a RecordingError."""
    value = data.get(name)
    if value is None:
        return default
    number = kinds in ((int, float),)
    if isinstance(value, kinds) and not (number and isinstance(value, bool)):
        return value
    raise RecordingError(f"{where}: {name}: expected {expected}, found {_shown(value)}")


def _shown(value: Any) -> str:
    text = json.dumps(value, default=repr)
    return f"{type(value).__name__} {text[:80]}{'...' if len(text) > 80 else ''}"


__all__ = [
    "EpisodeClass",
    "GradeReport",
    "GraderResult",
    "RecordedOutcome",
    "ShadowClass",
    "Verdict",
    "classify",
]
