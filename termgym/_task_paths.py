"""Where task folders are: the bundled environments/ folder plus folders the user names.

Kept free of heavy imports: `import termgym` uses it to register every task with Gymnasium.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

SPEC_FILE = "task.yaml"
"""The file that makes a folder a task."""

TASKS_PATH_ENV = "TERMGYM_TASKS_PATH"
"""Extra task folders, os.pathsep-separated; each holds task folders (or is one)."""

_SOURCE_TREE = Path(__file__).resolve().parents[1] / "environments"
_IN_WHEEL = Path(__file__).resolve().parent / "_environments"
BUNDLED = _SOURCE_TREE if _SOURCE_TREE.is_dir() else _IN_WHEEL
"""The tasks shipped with termgym: environments/ in a checkout, a copy inside a wheel."""


def task_roots(paths: Sequence[str | Path] | None = None) -> list[Path]:
    """Folders searched for tasks: `paths`, then $TERMGYM_TASKS_PATH, then the bundled ones."""
    roots = [Path(p) for p in paths or ()]
    roots += [Path(p) for p in os.environ.get(TASKS_PATH_ENV, "").split(os.pathsep) if p]
    roots.append(BUNDLED)
    unique: list[Path] = []
    for root in roots:
        if root.resolve() not in [u.resolve() for u in unique]:
            unique.append(root)
    return unique


def task_dirs(paths: Sequence[str | Path] | None = None) -> dict[str, Path]:
    """Task id -> task folder; the first root holding an id wins."""
    found: dict[str, Path] = {}
    for root in task_roots(paths):
        if (root / SPEC_FILE).is_file():
            found.setdefault(root.name, root)
            continue
        if not root.is_dir():
            continue
        for child in sorted(root.iterdir()):
            if (child / SPEC_FILE).is_file():
                found.setdefault(child.name, child)
    return found
