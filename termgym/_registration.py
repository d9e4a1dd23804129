"""Every task as a Gymnasium id: `gymnasium.make("termgym/<task-id>-v0")`.

Light on imports (Gymnasium, PyYAML and the task folder scan only): `import termgym` runs it.
A registered spec names its task by id, never by a folder of this machine, so a spec's JSON
(`EnvSpec.to_json`) makes the same environment wherever that task id is known (bundled, on
TERMGYM_TASKS_PATH, or in a folder given to `register_tasks`). The spec's
`max_episode_steps` is the task's own step limit (`limits.max_steps`).
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import yaml

from termgym._task_paths import SPEC_FILE, add_folder, task_dirs

NAMESPACE = "termgym"
ENTRY_POINT = "termgym.env._env:TerminalEnv"
MULTI_TASK_ID = f"{NAMESPACE}/multi-v0"
"""One environment over a task set (`tasks=`, default every task), a task drawn per episode."""
DEFAULT_MAX_STEPS = 50
"""A task's step limit when its task.yaml names none (the `Limits.max_steps` default)."""

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def env_id(task_id: str) -> str:
    """The Gymnasium id of a task."""
    return f"{NAMESPACE}/{task_id}-v0"


def register_tasks(*folders: str | Path) -> list[str]:
    """Register the bundled tasks, those on TERMGYM_TASKS_PATH, and those under `folders`.

    Each folder is a folder of task folders (each holding a task.yaml), or a task folder;
    from now on `termgym.make("<id>")` and `gymnasium.make(...)` both find its tasks. Tasks
    are loaded and validated when an environment is made, not here, so registering is cheap
    (only each task's step limit is read). Returns the Gymnasium ids registered.
    Registering the same task again replaces it.

    Raises:
        TaskNotFound: a folder does not exist or holds no task.
    """
    for folder in folders:
        add_folder(folder)
    ids = []
    for task_id, folder in task_dirs().items():
        gid = env_id(task_id)
        gym.registry.pop(gid, None)
        gym.register(
            id=gid,
            entry_point=ENTRY_POINT,
            kwargs={"task": task_id},
            max_episode_steps=_max_steps(folder),
        )
        ids.append(gid)
    gym.registry.pop(MULTI_TASK_ID, None)
    gym.register(id=MULTI_TASK_ID, entry_point="termgym.env._multi:MultiTaskEnv")
    return ids


def _max_steps(folder: Path) -> int:
    """The task's `limits.max_steps`, or the default; a task.yaml that does not parse gets
    the default here and its real error when the environment is made."""
    try:
        spec = yaml.load((folder / SPEC_FILE).read_text(), Loader=_Loader)
        value = spec.get("limits", {}).get("max_steps", DEFAULT_MAX_STEPS)
    except (OSError, yaml.YAMLError, AttributeError):
        return DEFAULT_MAX_STEPS
    return value if isinstance(value, int) and value > 0 else DEFAULT_MAX_STEPS


def registered_ids() -> list[str]:
    """The Gymnasium ids of every registered termgym task."""
    return sorted(gid for gid in gym.registry if gid.startswith(NAMESPACE + "/"))
