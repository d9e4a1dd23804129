"""Running agents over tasks and variants: jobs, episodes, the parallel runner."""

from __future__ import annotations

from termgym.run._episode import EpisodeResult, run_episode
from termgym.run._jobs import Job, finished_episodes, plan_jobs, select_tasks
from termgym.run._runner import RunConfig, Runner, RunSummary

__all__ = [
    "EpisodeResult",
    "Job",
    "RunConfig",
    "RunSummary",
    "Runner",
    "finished_episodes",
    "plan_jobs",
    "run_episode",
    "select_tasks",
]
