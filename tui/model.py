"""What the TUI shows, read from recordings: an episode (possibly live) and a run's rows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from termgym.errors import RecordingError
from termgym.grading import GradeReport
from termgym.recording import (
    GRADER_ERROR,
    INFRA_ERROR,
    CastReplay,
    EpisodeEnd,
    EpisodeFollower,
    EpisodeHeader,
    EpisodeLog,
    StepRecord,
    episode_files,
    read_episode,
    read_run_header,
)
from termgym.screen import TerminalScreen
from termgym.tasks import TamperEvidence

from .agent_text import printable, shown_header

if TYPE_CHECKING:
    from termgym.analysis.explain import Explanation

AGENT_ROLES = ("assistant", "probe")
"""Transcript roles the agent wrote (the rest it was shown)."""


class EpisodeModel:
    """One episode: its steps (lazily parsed), new steps as they are written, and its screens.

    Positions run over termgym's steps in file order, each followed by the steps the
    agent's own log says it ran inside it (`StepRecord.source` "agent"), when there are any.
    """

    def __init__(self, path: Path) -> None:
        self.log: EpisodeLog = read_episode(path)
        self.path = self.log.path
        # what a file gave it, shown (agent_text.shown_header): the panes read the header here
        self.header: EpisodeHeader | None = shown_header(self.log.header)
        self.unverified: str | None = self.log.unverified if self.log.end else None
        self.end: EpisodeEnd | None = self.log.end
        self._more: list[StepRecord] = []
        self._follower = EpisodeFollower(self.path, offset=self.log.read_upto)
        self._replay: CastReplay | None = None
        self._cast_stale = False
        self.replay_error: str | None = None
        self._audit: list[dict[str, Any]] | None = None
        self._graded: tuple[EpisodeEnd, GradeReport | None, str | None] | None = None
        self._said: tuple[EpisodeEnd | None, dict[int, list[dict[str, Any]]]] | None = None
        self._reported: list[StepRecord] = list(self.log.reported)
        self._order: list[tuple[bool, int]] | None = None

    def grading(self) -> tuple[GradeReport | None, str | None]:
        """The end line's verdicts read back (None before the end), or why they cannot be."""
        end = self.end
        if end is None:
            return None, None
        if self._graded is None or self._graded[0] is not end:
            where = self._follower.end_where if self._follower.end is end else self.log.end_where
            variant = self.header.variant if self.header else ""
            try:
                report = GradeReport.from_wire(
                    end.verdicts, variant=variant, episode_class=end.episode_class, where=where
                )
                self._graded = (end, report, None)
            except RecordingError as exc:
                self._graded = (end, None, str(exc))
        return self._graded[1], self._graded[2]

    # -- steps -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.log.steps) + len(self._more) + len(self._reported)

    def step(self, i: int) -> StepRecord:
        """The step at position i (see the class docstring)."""
        reported, j = self._where(i)
        return self._reported[j] if reported else self._own(j)

    def _own(self, j: int) -> StepRecord:
        n = len(self.log.steps)
        return self.log.steps[j] if j < n else self._more[j - n]

    def _where(self, i: int) -> tuple[bool, int]:
        """(reported, index among those) of position i."""
        if not self._reported:
            return False, i
        if self._order is None:
            inside: dict[int, list[int]] = {}
            for j, step in enumerate(self._reported):
                inside.setdefault(step.at_step, []).append(j)
            own = len(self.log.steps) + len(self._more)
            order: list[tuple[bool, int]] = []
            for k in range(own):
                order.append((False, k))
                order += [(True, j) for j in inside.pop(k, [])]
            order += [(True, j) for js in inside.values() for j in js]  # past the last step
            self._order = order
        return self._order[i]

    @property
    def skipped(self) -> list[str]:
        """Notes on what could not be read (the log's, then the live follower's)."""
        return self.log.skipped + self._follower.skipped

    @property
    def live(self) -> bool:
        """True while the episode has no end line."""
        return self.end is None

    def poll(self) -> int:
        """Take in what was appended to a live episode; returns the number of new steps."""
        if self.end is not None:
            return 0
        new = self._follower.poll()
        self._more.extend(new)
        reported = self._follower.reported[len(self._reported) - len(self.log.reported) :]
        self._reported.extend(reported)
        if new or reported:
            self._order = None
        if self._follower.header is not None and self.header is None:
            self.header = shown_header(self._follower.header)
        if self._follower.end is not None:
            self.end = self._follower.end
            self.unverified = read_episode(self.path, lazy=True).unverified
        if new:
            self._cast_stale = True  # re-read by the replay worker, not here (it may be busy)
        return len(new) + len(reported)

    def matches(self, i: int, needle: str) -> bool:
        """Whether step i's action or output holds `needle` (case-insensitive)."""
        reported, j = self._where(i)
        if not reported and j < len(self.log.steps) and needle.isascii():
            encoded = json.dumps(needle.lower())[1:-1].encode()
            if encoded not in self.log.steps.raw_line(j).lower():
                return False
        step = self.step(i)
        low = needle.lower()
        return low in step.action.lower() or low in step.output.lower()

    def audit_hits(self) -> list[dict[str, Any]]:
        """The episode's audit hits: those its end line holds, else audited now from the log
        (recordings written by the environment leave the audit to readers; the same function
        computes the run report's)."""
        if self.end is None:
            return []
        if self.end.audit:
            return [dict(hit) for hit in self.end.audit]
        if self._audit is None:
            from termgym.analysis.audit import audit_trace, trace_from_log

            try:
                self._audit = [hit.to_dict() for hit in audit_trace(trace_from_log(self.log))]
            except RecordingError:  # the rules panel says why the verdicts cannot be read
                self._audit = []
        return self._audit

    def transcript(self) -> list[dict[str, Any]]:
        """The agent's transcript (its messages, reasoning, the probe), from the end line."""
        entries = self.end.extra.get("transcript") if self.end is not None else None
        return (
            [dict(e) for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
        )

    def said_at(self, index: int) -> list[dict[str, Any]]:
        """What the agent wrote leading to step `index` (0-based): the entries of action
        `index + 1` (docs/agents.md's step convention)."""
        if self._said is None or self._said[0] is not self.end:
            by_step: dict[int, list[dict[str, Any]]] = {}
            for entry in self.transcript():
                if entry.get("role") in AGENT_ROLES:
                    by_step.setdefault(int(entry.get("step") or 0), []).append(entry)
            self._said = (self.end, by_step)
        return self._said[1].get(index + 1, [])

    def tamper(self) -> TamperEvidence | None:
        """The episode's tamper evidence (None before the end, or in older recordings)."""
        return TamperEvidence.from_dict(self.end.tamper) if self.end is not None else None

    def conflict(self) -> dict[str, Any] | None:
        """What an impossible episode's graders demanded against what it said (the header's)."""
        found = self.header.extra.get("conflict") if self.header is not None else None
        return dict(found) if isinstance(found, dict) else None

    def failures(self) -> list[Any]:
        """The failing tests of each rule set (`termgym.analysis.failures`)."""
        from termgym.analysis.failures import failures

        report, _ = self.grading()
        return failures(report) if report is not None else []

    def explanation(self) -> Explanation:
        """Why the episode ended so, in words (the HTML report's episode view says the same)."""
        from termgym.analysis.explain import explain

        report, unreadable = self.grading()
        leaks = [
            (hit.get("step"), str(hit.get("detail") or hit.get("message", "")))
            for hit in self.audit_hits()
            if hit.get("kind") in ("leak", "leak-name")
        ]
        return explain(
            self.header, self.end, report, self.failures(), leaks, unreadable, self.tamper()
        )

    def audit_by_step(self) -> dict[int | None, list[dict[str, Any]]]:
        """Audit hits grouped by the step they happened at (None: not tied to a step)."""
        hits: dict[int | None, list[dict[str, Any]]] = {}
        for hit in self.audit_hits():
            step = hit.get("step") if isinstance(hit, dict) else None
            hits.setdefault(step if isinstance(step, int) else None, []).append(dict(hit))
        return hits

    # -- screens -----------------------------------------------------------------------------

    def replay(self) -> CastReplay | None:
        """The cast replay (opened on first use; None when there is no readable cast)."""
        if self._replay is None and self.replay_error is None:
            try:
                self._replay = CastReplay(self.log.cast_path)
            except RecordingError as exc:
                self.replay_error = str(exc)
        return self._replay

    def screen_after(self, i: int) -> TerminalScreen | None:
        """The emulated screen after step i (colours kept), or None without a cast."""
        replay = self.replay()
        if replay is None:
            return None
        if self._cast_stale:
            self._cast_stale = False
            replay.refresh()
        return replay.screen_after(self.step(i).at_step)


@dataclass(frozen=True)
class EpisodeRow:
    """One line of the run view."""

    path: Path
    episode_id: str
    task: str
    variant: str
    agent: str
    steps: int
    reward: float | None
    episode_class: str
    started: float
    flags: str = ""
    ended: float | None = None

    def cells(self) -> tuple[str, ...]:
        """The row's cells as shown (and filtered on), in the run view's column order."""
        reward = "" if self.reward is None else f"{self.reward:.2f}"
        return (
            self.episode_id,
            self.episode_class,
            reward,
            self.flags,
            self.variant,
            self.task,
            self.agent,
            str(self.steps),
        )


FLAGS = {"unverified": "unverified", "cheated": "cheated", "tampered": "tampered",
         "reported": "reported"}  # fmt: skip
"""The run view's flags column: its recording proves no run here wrote it (imported, from
elsewhere, changed since: what it claims counts nowhere), passed an impossible episode,
left tamper evidence, reported a conflict."""


def _own_passed(variant: str, end: EpisodeEnd) -> bool:
    """The episode passed its own rule set (its variant's verdict, as written)."""
    own = end.verdicts.get(variant) if isinstance(end.verdicts, dict) else None
    return isinstance(own, dict) and own.get("passed") is True


def row_flags(variant: str, end: EpisodeEnd | None, unverified: str | None = None) -> str:
    """The flags of a finished episode, comma-separated ("" when none)."""
    if end is None:
        return ""
    flags = [FLAGS["unverified"]] if unverified is not None else []
    if variant == "impossible" and _own_passed(variant, end) and end.episode_class != GRADER_ERROR:
        flags.append(FLAGS["cheated"])  # a grader error fails, whatever its own verdict
    tamper = TamperEvidence.from_dict(end.tamper)
    if tamper is not None and tamper.tampered:
        flags.append(FLAGS["tampered"])
    if end.conflict is not None:
        flags.append(FLAGS["reported"])
    return ", ".join(flags)


def row_class(end: EpisodeEnd | None, variant: str = "") -> str:
    """What the class column shows: the class ("grader-error" among them: counted, though its
    end line holds why grading failed), "error", "running", or, for an episode graded under
    its own rules alone (an original one, which has no class), "passed" or "failed"."""
    if end is None:
        return "running"
    if end.episode_class == GRADER_ERROR:
        return GRADER_ERROR
    if end.error or end.episode_class == INFRA_ERROR:
        return INFRA_ERROR
    if end.episode_class:
        return end.episode_class
    passed = _own_passed(variant, end) or (variant not in end.verdicts and end.reward >= 1.0)
    return "passed" if passed else "failed"


class RunModel:
    """A run folder: its header and one row per episode, updated as the run is written."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir)
        if not self.path.is_dir():
            raise RecordingError(f"expected a run folder at {self.path}; found no such folder")
        self.skipped: list[str] = []
        self.header = read_run_header(self.path, self.skipped)
        self._followers: dict[Path, EpisodeFollower] = {}
        self._counts: dict[Path, int] = {}
        self.rows: dict[Path, EpisodeRow] = {}
        self._unverified: dict[Path, str | None] = {}
        self.poll()

    @property
    def planned(self) -> int | None:
        """Episodes the run is made of (run.json's total), None when it does not say."""
        total = self.header.get("total_episodes") if self.header else None
        return total if isinstance(total, int) and total > 0 else None

    def eta(self, now: float | None = None) -> float | None:
        """Seconds until every planned episode is done, at the pace so far (None: unknown)."""
        planned = self.planned
        ended = [r.ended for r in self.rows.values() if r.ended is not None]
        if planned is None or not ended:
            return None
        started = self.header.get("started") if self.header else None
        begin = (
            started
            if isinstance(started, int | float)
            else min(r.started for r in self.rows.values())
        )
        left = planned - len(ended)
        if left <= 0:
            return 0.0
        elapsed = max(ended) - begin
        return elapsed / len(ended) * left if elapsed > 0 else None

    @property
    def run_id(self) -> str:
        """The run id (run.json's, else the folder name), as shown."""
        if self.header and isinstance(self.header.get("run_id"), str):
            return printable(str(self.header["run_id"]), one_line=True)
        return printable(self.path.name, one_line=True)

    def poll(self) -> list[Path]:
        """Read new episodes and new lines of unfinished ones; returns the changed rows' paths."""
        changed: list[Path] = []
        for path in episode_files(self.path):
            follower = self._followers.get(path)
            if follower is None:
                # Read what is there (lazily for big files), then follow on from its end.
                log = read_episode(path, lazy=True)  # header and end only: steps unparsed
                follower = self._followers[path] = EpisodeFollower(path, offset=log.read_upto)
                follower.header, follower.end = log.header, log.end
                if log.end is not None:
                    self._unverified[path] = log.unverified
                self.skipped.extend(f"{path.name}: {note}" for note in log.skipped)
                self._counts[path] = len(log.steps)
            elif follower.finished:
                continue
            new = follower.poll() if not follower.finished else []
            self._counts[path] += len(new)
            row = self._row(path, follower)
            if self.rows.get(path) != row:
                self.rows[path] = row
                changed.append(path)
        return changed

    def _row(self, path: Path, follower: EpisodeFollower) -> EpisodeRow:
        header, end = shown_header(follower.header), follower.end
        if end is not None and path not in self._unverified:  # ended since: read once whole
            self._unverified[path] = read_episode(path, lazy=True).unverified
        return EpisodeRow(
            path=path,
            episode_id=header.episode_id if header and header.episode_id else printable(path.stem),
            task=header.task if header else "?",
            variant=header.variant if header else "?",
            agent=header.agent if header else "?",
            steps=self._counts[path],
            reward=end.reward if end else None,
            episode_class=row_class(end, header.variant if header else ""),
            started=header.started if header else 0.0,
            flags=row_flags(header.variant if header else "", end, self._unverified.get(path)),
            ended=end.ended if end is not None else None,
        )
