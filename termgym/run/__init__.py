"""Running agents over tasks and variants: jobs, episodes, the parallel runner."""

from __future__ import annotations

from termgym.run._config import RunConfig
from termgym.run._episode import EpisodeResult, run_episode
from termgym.run._executor import RunSide
from termgym.run._jobs import Job, finished_episodes, plan_jobs, plan_task_set, select_tasks
from termgym.run._progress import (
    EpisodeDone,
    MetricsServing,
    ProgressEvent,
    ProgressHook,
    RanOnNode,
    Retrying,
    RunPlanned,
    StepTaken,
)
from termgym.run._ray import ShippedResult, run_on_ray
from termgym.run._rollout import Policy, arollout, rollout
from termgym.run._runner import Runner, RunSummary
from termgym.run._trajectory import Trajectory, load_trajectories, save_trajectories
from termgym.run._verify import verify_values

__all__ = [
    "EpisodeDone",
    "EpisodeResult",
    "Job",
    "MetricsServing",
    "Policy",
    "ProgressEvent",
    "ProgressHook",
    "RanOnNode",
    "Retrying",
    "RunPlanned",
    "StepTaken",
    "RunConfig",
    "RunSide",
    "RunSummary",
    "Runner",
    "Trajectory",
    "arollout",
    "finished_episodes",
    "load_trajectories",
    "plan_jobs",
    "plan_task_set",
    "rollout",
    "run_episode",
    "save_trajectories",
    "select_tasks",
    "verify_values",
    "ShippedResult",
    "run_on_ray",
]
