"""What the report keeps of each episode for its per-episode view: the rule values of every
rule set, the verdicts with the failing tests, the explanation, a few steps, the audit's hits.

Built once, when the run is loaded (`load_run`), from the recording: the steps are clipped
(`STEPS_SHOWN`, `ACTION_CHARS`, `OUTPUT_CHARS`) so that a run of thousands of episodes makes
a report of a readable size; `termgym tui` replays every step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from termgym.analysis.audit import AuditHit
from termgym.analysis.explain import Explanation, RuleLine, explain, rule_lines
from termgym.analysis.failures import Failure, failures
from termgym.errors import RecordingError
from termgym.grading import GradeReport
from termgym.recording import EpisodeLog, StepRecord
from termgym.tasks import TamperEvidence

STEPS_SHOWN = (8, 4)
"""The first and the last steps an episode's view shows (the rest are counted)."""
REPORTED_SHOWN = 40
"""The steps an agent's own log reports that an episode's view shows (the rest are counted)."""
ACTION_CHARS = 600
OUTPUT_CHARS = 800
LEAK_KINDS = ("leak", "leak-name")
"""Audit kinds that say the agent wrote a hidden or old rule value (the explanation names them)."""


@dataclass(frozen=True)
class ShownStep:
    """One step as the report shows it (action and output clipped)."""

    index: int
    mode: str
    action: str
    output: str
    exit_code: int | None
    clipped: bool = False
    within: int | None = None
    """For a step the agent's own log reports: the step of termgym's it ran inside."""


@dataclass(frozen=True)
class VerdictLine:
    """One rule set's verdict: passed (None: could not run), score, error."""

    ruleset: str
    passed: bool | None
    score: float | None
    error: str | None
    own: bool


@dataclass(frozen=True)
class EpisodeDetail:
    """One episode as its view in the report shows it.

    Attributes:
        episode_id: The episode (as the run's summaries name it).
        path: Its recording (None: only a results.jsonl line is left).
        rules: Each rule's value as seen, in force and in every other rule set.
        verdicts: Each rule set's verdict, the episode's own first.
        failures: The failing tests of each rule set.
        explanation: Why it ended so.
        steps: The steps shown (`STEPS_SHOWN`).
        step_count: Every step it took.
        reported: The steps its agent's own log reports, shown (`REPORTED_SHOWN`): for
            reading, never graded (docs/recording-format.md, "Reported line").
        reported_count: Every step its agent's own log reports.
        conflict_reported: The reason it gave when it reported a conflict (None: it did not).
        tamper: Its tamper evidence (None: not read).
        hits: The audit's hits in it.
        instruction: The instruction it was given (clipped).
    """

    episode_id: str
    path: Path | None
    rules: tuple[RuleLine, ...] = ()
    verdicts: tuple[VerdictLine, ...] = ()
    failures: tuple[Failure, ...] = ()
    explanation: Explanation = field(
        default_factory=lambda: Explanation("error", "not recorded", ("Not recorded.",))
    )
    steps: tuple[ShownStep, ...] = ()
    step_count: int = 0
    reported: tuple[ShownStep, ...] = ()
    reported_count: int = 0
    conflict_reported: str | None = None
    tamper: TamperEvidence | None = None
    hits: tuple[AuditHit, ...] = ()
    instruction: str = ""

    @property
    def steps_left_out(self) -> int:
        return self.step_count - len(self.steps)


def _clip(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit] + f" … [{len(text) - limit} more characters]", True


def _shown_steps(log: EpisodeLog) -> tuple[ShownStep, ...]:
    first, last = STEPS_SHOWN
    count = len(log.steps)
    indexes = list(range(count)) if count <= first + last else [
        *range(first), *range(count - last, count)
    ]  # fmt: skip
    return tuple(_shown(log.steps[i]) for i in indexes)


def _shown(step: StepRecord) -> ShownStep:
    action, cut_action = _clip(step.action, ACTION_CHARS)
    output, cut_output = _clip(step.output, OUTPUT_CHARS)
    return ShownStep(
        step.index, step.mode, action, output, step.exit_code, cut_action or cut_output,
        step.within if step.source == "agent" else None,
    )  # fmt: skip


def detail_from_log(log: EpisodeLog, hits: Iterable[AuditHit] = ()) -> EpisodeDetail:
    """The episode's view, read from its recording and its audit hits."""
    header, end = log.header, log.end
    hits = tuple(hits)
    report: GradeReport | None = None
    unreadable: str | None = None
    if end is not None:
        try:
            report = GradeReport.from_wire(
                end.verdicts,
                variant=header.variant if header else "",
                episode_class=end.episode_class,
                where=log.end_where,
            )
        except RecordingError as exc:
            unreadable = str(exc)
    failed = tuple(failures(report)) if report is not None else ()
    leaks = [(h.step, h.detail) for h in hits if h.kind in LEAK_KINDS]
    verdicts: tuple[VerdictLine, ...] = ()
    if report is not None:
        order = [report.own, *(n for n in report.verdicts if n != report.own)]
        verdicts = tuple(
            VerdictLine(n, v.passed, v.score, v.error, n == report.own)
            for n in order
            if (v := report.verdicts.get(n)) is not None
        )
    tamper = TamperEvidence.from_dict(end.tamper) if end is not None else None
    instruction = header.extra.get("instruction") if header is not None else None
    return EpisodeDetail(
        episode_id=log.episode_id,
        path=log.path,
        rules=tuple(rule_lines(header, report)) if header is not None else (),
        verdicts=verdicts,
        failures=failed,
        explanation=explain(header, end, report, failed, leaks, unreadable, tamper),
        steps=_shown_steps(log),
        step_count=len(log.steps),
        reported=tuple(_shown(step) for step in log.reported[:REPORTED_SHOWN]),
        reported_count=len(log.reported),
        conflict_reported=end.conflict if end is not None else None,
        tamper=tamper,
        hits=hits,
        instruction=_clip(instruction, 2000)[0] if isinstance(instruction, str) else "",
    )


def details_by_episode(
    logs: Iterable[EpisodeLog], hits: Iterable[AuditHit]
) -> dict[str, EpisodeDetail]:
    """Episode id -> its view, for every recorded episode."""
    by_episode: dict[str, list[AuditHit]] = {}
    for hit in hits:
        by_episode.setdefault(hit.episode_id, []).append(hit)
    return {
        log.episode_id: detail_from_log(log, by_episode.get(log.episode_id, ())) for log in logs
    }


def unrecorded(episode_id: str, error: str | None) -> EpisodeDetail:
    """An episode whose every attempt failed: results.jsonl is all there is."""
    why = error or "infrastructure error"
    return EpisodeDetail(
        episode_id,
        None,
        explanation=Explanation(
            "error", why.splitlines()[0][:120], (f"Not counted: every attempt failed ({why}).",)
        ),
    )


def requalified(details: Mapping[str, EpisodeDetail], prefix: str) -> dict[str, EpisodeDetail]:
    """The views keyed "<prefix>/<episode>" (runs pooled that share episode ids)."""
    return {f"{prefix}/{k}": replace(d, episode_id=f"{prefix}/{k}") for k, d in details.items()}
