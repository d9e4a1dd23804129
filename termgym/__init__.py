"""termgym: Gymnasium environments over terminal tasks with mutable hidden graders.

import termgym
env = termgym.make("fuel-planner", variant="contradicted")
# or: gymnasium.make("termgym/fuel-planner-v0", variant="contradicted")
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from termgym._actions import REPORT_CONFLICT, SUBMIT, report_conflict
from termgym._version import __version__
from termgym.errors import TermgymError

if TYPE_CHECKING:
    from termgym.env import TerminalEnv
    from termgym.run import Trajectory
    from termgym.tasks import Task

__all__ = [
    "REPORT_CONFLICT",
    "SUBMIT",
    "TermgymError",
    "__version__",
    "arollout",
    "make",
    "register_tasks",
    "report_conflict",
    "rollout",
]


def make(task: str | Path | Task, **kwargs: Any) -> TerminalEnv:
    """Make the environment of a task id, task folder or loaded task; see `TerminalEnv`."""
    from termgym.env import make as _make

    return _make(task, **kwargs)


def rollout(policy: Any, tasks: Any = "*", **options: Any) -> list[Trajectory]:
    """Run episodes of a policy function and return trajectories; see `termgym.run.rollout`."""
    from termgym.run import rollout as _rollout

    return _rollout(policy, tasks, **options)


async def arollout(policy: Any, tasks: Any = "*", **options: Any) -> list[Trajectory]:
    """`rollout` from a running event loop; see `termgym.run.arollout`."""
    from termgym.run import arollout as _arollout

    return await _arollout(policy, tasks, **options)


def register_tasks(*folders: str | Path) -> list[str]:
    """Register bundled tasks, those on TERMGYM_TASKS_PATH and under `folders` with Gymnasium."""
    from termgym._registration import register_tasks as _register

    return _register(*folders)


def _register_on_import() -> None:
    with contextlib.suppress(TermgymError):  # a broken extra task folder must not break import
        register_tasks()


_register_on_import()


def __getattr__(name: str) -> Any:
    """Submodules load on first use (`termgym.env`, `termgym.sandbox`, ...)."""
    import importlib

    if name.startswith("_"):
        raise AttributeError(name)
    try:
        return importlib.import_module(f"termgym.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"termgym.{name}":
            raise
        raise AttributeError(f"module 'termgym' has no attribute {name!r}") from None
