"""Every task as a Gymnasium id: `gymnasium.make("termgym/<task-id>-v0")`.

Light on imports (Gymnasium and the task folder scan only): `import termgym` runs it.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym

from termgym._task_paths import add_folder, task_dirs

NAMESPACE = "termgym"
ENTRY_POINT = "termgym.env._env:TerminalEnv"
MULTI_TASK_ID = f"{NAMESPACE}/multi-v0"
"""One environment over a task set (`tasks=`, default every task), a task drawn per episode."""


def env_id(task_id: str) -> str:
    """The Gymnasium id of a task."""
    return f"{NAMESPACE}/{task_id}-v0"


def register_tasks(*folders: str | Path) -> list[str]:
    """Register the bundled tasks, those on TERMGYM_TASKS_PATH, and those under `folders`.

    Each folder is a folder of task folders (each holding a task.yaml), or a task folder;
    from now on `termgym.make("<id>")` and `gymnasium.make(...)` both find its tasks. Tasks
    are loaded and validated when an environment is made, not here, so registering is cheap.
    Returns the Gymnasium ids registered. Registering the same task again replaces it.

    Raises:
        TaskNotFound: a folder does not exist or holds no task.
    """
    for folder in folders:
        add_folder(folder)
    ids = []
    for task_id, folder in task_dirs().items():
        gid = env_id(task_id)
        gym.registry.pop(gid, None)
        gym.register(id=gid, entry_point=ENTRY_POINT, kwargs={"task": str(folder.resolve())})
        ids.append(gid)
    gym.registry.pop(MULTI_TASK_ID, None)
    gym.register(id=MULTI_TASK_ID, entry_point="termgym.env._multi:MultiTaskEnv")
    return ids


def registered_ids() -> list[str]:
    """The Gymnasium ids of every registered termgym task."""
    return sorted(gid for gid in gym.registry if gid.startswith(NAMESPACE + "/"))
