"""What a run tells its progress hook as it goes: one frozen dataclass per kind of event.

`Runner(config, progress=hook)` calls `hook(event)` from its own threads; a hook matches on
the event's type:

    def hook(event: ProgressEvent) -> None:
        match event:
            case EpisodeDone(result=result):
                print(printable(result.job.episode_id), result.status)
            case Retrying(job=job, attempt=attempt, error=error):
                print(f"{printable(job.episode_id)}: attempt {attempt} failed: {printable(error)}")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from termgym.run._episode import EpisodeResult
from termgym.run._jobs import Job


@dataclass(frozen=True)
class RunPlanned:
    """The run's size is known: `total` episodes, `skipped` of them done by an earlier run."""

    total: int
    skipped: int


@dataclass(frozen=True)
class MetricsServing:
    """The run's live metrics are served on `port` (`--metrics-port`)."""

    port: int


@dataclass(frozen=True)
class StepTaken:
    """The agent of `job` has taken `steps` steps so far."""

    job: Job
    steps: int


@dataclass(frozen=True)
class Retrying:
    """Attempt `attempt` of `job` hit an infrastructure error (`error`); it runs again."""

    job: Job
    attempt: int
    error: str


@dataclass(frozen=True)
class RanOnNode:
    """`job` ran on the Ray node `node_id` (runs with `--ray` only)."""

    job: Job
    node_id: str


@dataclass(frozen=True)
class EpisodeDone:
    """An episode finished (ok, or failed after every retry) and its result was written."""

    result: EpisodeResult


ProgressEvent = RunPlanned | MetricsServing | StepTaken | Retrying | RanOnNode | EpisodeDone
"""Every event a run reports."""

ProgressHook = Callable[[ProgressEvent], None]
"""What `Runner(progress=...)` takes."""
