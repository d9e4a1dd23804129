"""Where task folders are: the bundled environments/ folder plus folders the user names.

Kept free of heavy imports: `import termgym` uses it to register every task with Gymnasium.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

from termgym.errors import TaskNotFound

SPEC_FILE = "task.yaml"
"""The file that makes a folder a task."""

TASKS_PATH_ENV = "TERMGYM_TASKS_PATH"
"""Extra task folders, os.pathsep-separated; each holds task folders (or is one)."""

_SOURCE_TREE = Path(__file__).resolve().parents[1] / "environments"
_IN_WHEEL = Path(__file__).resolve().parent / "_environments"
BUNDLED = _SOURCE_TREE if _SOURCE_TREE.is_dir() else _IN_WHEEL
"""The tasks shipped with termgym: environments/ in a checkout, a copy inside a wheel."""


_added: list[Path] = []
"""Folders given to `termgym.register_tasks`, searched after the paths a call names."""

HOW_TO_ADD = (
    "Add a folder of tasks with --path, the environment variable "
    f"{TASKS_PATH_ENV}, or termgym.register_tasks(folder)."
)


def _foreign(folder: Path) -> bool:
    """A Terminal-Bench (task.yaml + run-tests.sh) or Harbor (task.toml + instruction.md)
    task folder: converted on the fly (termgym.importing), cached by content."""
    return (
        (folder / "run-tests.sh").is_file()
        and (folder / SPEC_FILE).is_file()
        or (
            (folder / "task.toml").is_file()
            and ((folder / "instruction.md").is_file() or (folder / "steps").is_dir())
        )
    )


def _is_task(folder: Path) -> bool:
    return (folder / SPEC_FILE).is_file() or _foreign(folder)


def _converted(folder: Path) -> Path | None:
    """The termgym task converted from a foreign folder, or None (with a warning) when it
    cannot be converted."""
    from termgym.errors import TaskError
    from termgym.importing import converted

    try:
        return converted(folder)
    except TaskError as exc:
        warnings.warn(f"{folder}: not imported: {exc}", UserWarning, stacklevel=4)
        return None


def check_folder(path: str | Path) -> Path:
    """`path` as a folder of tasks (or a task folder) that exists and holds at least one task.

    Raises:
        TaskNotFound: it does not exist, is not a folder, or holds no task.yaml.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise TaskNotFound(
            f"Expected a folder of tasks (or a task folder) at {folder}; found "
            f"{'a file' if folder.exists() else 'nothing'} there."
        )
    if not _is_task(folder) and not any(
        child.is_dir() and _is_task(child) for child in folder.iterdir()
    ):
        raise TaskNotFound(
            f"Expected {folder} to hold task folders (<id>/{SPEC_FILE}, or Terminal-Bench or "
            f"Harbor tasks) or to be one; found no {SPEC_FILE} or task.toml there."
        )
    return folder


def add_folder(path: str | Path) -> Path:
    """Search `path` for tasks from now on (in this process); it is checked first."""
    folder = check_folder(path)
    if folder.resolve() not in [f.resolve() for f in _added]:
        _added.append(folder)
    return folder


def task_roots(paths: Sequence[str | Path] | None = None) -> list[Path]:
    """Folders searched for tasks: `paths`, the folders added by `register_tasks`, then
    $TERMGYM_TASKS_PATH, then the bundled ones."""
    roots = [Path(p) for p in paths or ()]
    roots += _added
    roots += [Path(p) for p in os.environ.get(TASKS_PATH_ENV, "").split(os.pathsep) if p]
    roots.append(BUNDLED)
    unique: list[Path] = []
    for root in roots:
        if root.resolve() not in [u.resolve() for u in unique]:
            unique.append(root)
    return unique


def task_dirs(paths: Sequence[str | Path] | None = None) -> dict[str, Path]:
    """Task id -> task folder; the first root holding an id wins, and a warning names both
    folders when another root holds the same id (a task shadowing a bundled one, say)."""
    return tasks_in(task_roots(paths))


def tasks_in(roots: Sequence[str | Path]) -> dict[str, Path]:
    """Task id -> task folder of the tasks found in `roots` only (each a folder of tasks or
    a task folder; foreign ones converted), in the order given."""
    found: dict[str, Path] = {}
    for root in map(Path, roots):
        if _is_task(root):
            _add(found, root)
            continue
        if not root.is_dir():
            continue
        for child in sorted(root.iterdir()):
            if child.is_dir() and _is_task(child):
                _add(found, child)
    return found


def _add(found: dict[str, Path], folder: Path) -> None:
    if _foreign(folder):
        converted = _converted(folder)
        if converted is not None:
            _keep(found, converted.name, converted)
        return
    _keep(found, folder.name, folder)


def _keep(found: dict[str, Path], task_id: str, folder: Path) -> None:
    first = found.setdefault(task_id, folder)
    if first.resolve() != folder.resolve():
        warnings.warn(
            f"task {task_id!r} is in both {first} and {folder}; using the one in {first}",
            UserWarning,
            stacklevel=3,
        )
