"""Loading a run folder for reporting: episode summaries, the audit, and the run header."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from termgym._vocabulary import BOOTSTRAP
from termgym.analysis.audit import AuditReport, audit_logs
from termgym.analysis.disclosure import DisclosureSplit, disclosure_split
from termgym.analysis.metrics import EpisodeSummary, RunMetrics, metrics_by_agent, summary_from_log
from termgym.errors import RecordingError
from termgym.recording import last_results, read_run
from termgym.report._episodes import EpisodeDetail, details_by_episode, requalified, unrecorded


@dataclass(frozen=True)
class RunData:
    """A run as the reports see it.

    Attributes:
        path: The run folder.
        run_id: Its id.
        header: run.json (empty when absent).
        summaries: One per recorded episode.
        audit: The trace audit of every episode.
        metrics: Agent -> metrics of its episodes.
        skipped: Notes on what could not be read.
        disclosure: Agent -> its pass rates split by disclosure (termgym.analysis.disclosure).
        episodes: Episode id -> what its view in the HTML report shows.
        unverified: The episodes whose recordings prove no run here wrote them (imported
            from ATIF, copied from elsewhere, changed since: `EpisodeSummary.unverified`).
            They are in no figure: not in `summaries`, the metrics, the audit or the
            disclosure split; reports list them apart, as unverified.
    """

    path: Path
    run_id: str
    header: dict[str, Any]
    summaries: tuple[EpisodeSummary, ...]
    audit: AuditReport
    metrics: dict[str, RunMetrics]
    skipped: list[str] = field(default_factory=list)
    disclosure: dict[str, DisclosureSplit] = field(default_factory=dict)
    episodes: dict[str, EpisodeDetail] = field(default_factory=dict)
    unverified: tuple[EpisodeSummary, ...] = ()


def steps_line(run: RunData) -> str:
    """How many steps termgym ran, and how many more the agents' own logs report."""
    ran = sum(s.steps for s in run.summaries)
    reported = sum(s.reported_steps for s in run.summaries)
    line = f"steps: {ran} run by termgym"
    if reported:
        episodes = sum(1 for s in run.summaries if s.reported_steps)
        line += (
            f", {reported} more reported by the agent's own log in {episodes} episodes "
            "(commands it ran inside its own steps: shown in the TUI, never graded or audited)"
        )
    return line


def disclosure_by_agent(
    summaries: tuple[EpisodeSummary, ...] | list[EpisodeSummary],
    audit: AuditReport,
    **options: Any,
) -> dict[str, DisclosureSplit]:
    """Each agent's pass rates on disclosed and undisclosed episodes and tasks."""
    disclosed = audit.disclosed_episodes()
    return {
        agent: disclosure_split(
            [s for s in summaries if s.agent == agent],
            disclosed,
            by_mode=audit.for_agent(agent).disclosure_by_mode(),
            **options,
        )
        for agent in sorted({s.agent for s in summaries})
    }


def load_run(
    run_dir: str | Path,
    *,
    resamples: int = BOOTSTRAP.resamples,
    seed: int | None = BOOTSTRAP.seed,
    confidence: float = BOOTSTRAP.confidence,
) -> RunData:
    """Read a run folder (runs/<run-id>/) and compute its metrics and audit."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        found = f"the file {run_dir}" if run_dir.exists() else f"no folder {run_dir}"
        raise RecordingError(f"expected a run folder with episodes/, found {found}")
    log = read_run(run_dir)
    if not log.episodes and not (run_dir / "episodes").is_dir():
        raise RecordingError(
            f"expected a run folder holding episodes/<id>.jsonl, found none in {run_dir}"
        )
    unread: list[str] = []  # results.jsonl lines that are no result (a line cut short)
    results = last_results(run_dir, unread)
    summaries = [summary_from_log(ep, results.get(ep.episode_id)) for ep in log.episodes]
    recorded = {s.episode_id for s in summaries}
    agent = str((log.header or {}).get("agent", ""))
    left: dict[str, EpisodeDetail] = {}
    for episode_id, result in results.items():
        # The runner sets aside the recordings of attempts that failed for infrastructure
        # reasons; when every attempt failed, results.jsonl is all that is left.
        if episode_id not in recorded and result.status == "infra-error":
            summaries.append(
                EpisodeSummary(
                    episode_id=episode_id,
                    task=result.task,
                    variant=result.variant,
                    agent=agent,
                    passed=False,
                    error=result.error or "infrastructure error",
                    run_id=log.run_id,
                )
            )
            left[episode_id] = unrecorded(episode_id, result.error)
    # the audit's rates are over counted episodes, as every rate: an infrastructure error
    # (no end line, a machinery failure) is left out of its denominators too, and so is an
    # episode whose recording proves nothing (it is in no figure at all)
    of_logs = zip(log.episodes, summaries[: len(log.episodes)], strict=True)
    audit = audit_logs(
        episode for episode, s in of_logs if not s.infra_error and s.unverified is None
    )
    unverified = tuple(s for s in summaries if s.unverified is not None)
    summaries = [s for s in summaries if s.unverified is None]
    options = {"resamples": resamples, "seed": seed, "confidence": confidence}
    return RunData(
        path=run_dir,
        run_id=log.run_id,
        header=dict(log.header or {}),
        unverified=unverified,
        summaries=tuple(summaries),
        audit=audit,
        metrics=metrics_by_agent(summaries, **options),
        skipped=list(log.skipped)
        + unread
        + [f"{ep.episode_id}: {note}" for ep in log.episodes for note in ep.skipped],
        disclosure=disclosure_by_agent(summaries, audit, **options),
        episodes={**details_by_episode(log.episodes, audit.hits), **left},
    )


def run_labels(runs: list[RunData]) -> list[str]:
    """What names each run among `runs`: its id, or its folder where runs share an id (two
    runs of one name in different places, a run and its copy)."""
    ids = Counter(run.run_id for run in runs)
    return [run.run_id if ids[run.run_id] == 1 else str(run.path) for run in runs]


def _qualified(run: RunData, label: str) -> RunData:
    """The run with every episode id prefixed by `label` ("<label>/<episode>")."""

    def q(episode_id: str) -> str:
        return f"{label}/{episode_id}"

    audit = AuditReport(
        run.audit.episodes,
        tuple(replace(h, episode_id=q(h.episode_id)) for h in run.audit.hits),
        tuple(replace(p, episode_id=q(p.episode_id)) for p in run.audit.probes),
        {q(e): a for e, a in run.audit.agents.items()},
    )
    summaries = tuple(replace(s, episode_id=q(s.episode_id)) for s in run.summaries)
    episodes = requalified(run.episodes, label)
    unverified = tuple(replace(s, episode_id=q(s.episode_id)) for s in run.unverified)
    return replace(run, summaries=summaries, audit=audit, episodes=episodes, unverified=unverified)


def merge_runs(
    runs: list[RunData],
    *,
    resamples: int = BOOTSTRAP.resamples,
    seed: int | None = BOOTSTRAP.seed,
    confidence: float = BOOTSTRAP.confidence,
) -> RunData:
    """One report over several runs (e.g. the oracle's and the memorizer's): episodes pooled,
    metrics recomputed per agent. Episode ids are prefixed by their run id when runs share ids.
    """
    if len(runs) == 1:
        return runs[0]
    ids = [s.episode_id for r in runs for s in (*r.summaries, *r.unverified)]
    if len(ids) != len(set(ids)):
        runs = [_qualified(r, label) for r, label in zip(runs, run_labels(runs), strict=True)]
    summaries = tuple(s for run in runs for s in run.summaries)
    audit = AuditReport(
        sum(r.audit.episodes for r in runs),
        tuple(h for r in runs for h in r.audit.hits),
        tuple(p for r in runs for p in r.audit.probes),
        {e: a for r in runs for e, a in r.audit.agents.items()},
    )
    return RunData(
        path=runs[0].path,
        run_id=" + ".join(r.run_id for r in runs),
        header={"runs": [r.header for r in runs]},
        summaries=summaries,
        audit=audit,
        metrics=metrics_by_agent(summaries, resamples=resamples, seed=seed, confidence=confidence),
        skipped=[note for r in runs for note in r.skipped],
        unverified=tuple(s for r in runs for s in r.unverified),
        disclosure=disclosure_by_agent(
            summaries, audit, resamples=resamples, seed=seed, confidence=confidence
        ),
        episodes={k: d for r in runs for k, d in r.episodes.items()},
    )
