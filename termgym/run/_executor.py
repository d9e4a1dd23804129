"""The `RunSide` a run lends the executor that runs its episodes (threads here, or Ray).

A `Runner` plans the jobs and owns the run folder; an executor (the runner's worker threads,
or `run_on_ray` over a cluster's workers) runs the jobs and hands each result back through
these three members, and nothing else of the runner.
"""

from __future__ import annotations

from typing import Protocol

from termgym.run._config import RunConfig
from termgym.run._episode import EpisodeResult
from termgym.run._progress import ProgressEvent


class RunSide(Protocol):
    """What an executor may use of the run it serves."""

    @property
    def config(self) -> RunConfig:
        """The run."""

    def report(self, event: ProgressEvent) -> None:
        """Tell the run's progress hook of `event`."""

    def record(self, result: EpisodeResult, results: list[EpisodeResult]) -> None:
        """Keep a finished job's result: results.jsonl, live metrics, progress; appended to
        `results`."""
