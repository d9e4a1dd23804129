"""Where tasks come from: the bundled environments/ folder plus folders the user names."""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from pathlib import Path

from termgym._task_paths import HOW_TO_ADD, SPEC_FILE, task_dirs, task_roots
from termgym.errors import TaskNotFound
from termgym.tasks._loader import Task, load_task

_cache: dict[Path, tuple[float, Task]] = {}


def load_cached(folder: Path) -> Task:
    """Load a task folder, reusing the last load while its task.yaml is unchanged."""
    folder = folder.resolve()
    mtime = max((p.stat().st_mtime for p in folder.rglob("*") if p.is_file()), default=0.0)
    hit = _cache.get(folder)
    if hit and hit[0] == mtime:
        return hit[1]
    task = load_task(folder)
    _cache[folder] = (mtime, task)
    return task


def get_task(task_id: str, paths: Sequence[str | Path] | None = None) -> Task:
    """The task with that id (or at that folder path).

    Raises:
        TaskNotFound: no such task; the message lists where it looked and close ids.
        TaskSpecError: the task exists but its spec is malformed.
    """
    if os.sep in task_id or (Path(task_id) / SPEC_FILE).is_file():
        return load_cached(Path(task_id))
    dirs = task_dirs(paths)
    if task_id not in dirs:
        close = difflib.get_close_matches(task_id, list(dirs), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        where = ", ".join(
            str(r) if Path(r).is_dir() else f"{r} (no such folder)" for r in task_roots(paths)
        )
        raise TaskNotFound(
            f"no task {task_id!r} in the folders searched ({where}): expected one of "
            f"{sorted(dirs)}.{hint} {HOW_TO_ADD}"
        )
    return load_cached(dirs[task_id])


def list_tasks(paths: Sequence[str | Path] | None = None) -> list[Task]:
    """Every task found, loaded and validated (a malformed one raises TaskSpecError)."""
    return [load_cached(folder) for folder in task_dirs(paths).values()]
