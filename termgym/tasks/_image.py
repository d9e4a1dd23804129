"""The image a task runs in: the one it names, or one built from its Dockerfile."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from termgym.errors import ImageError
from termgym.sandbox import BASE_IMAGE
from termgym.tasks._loader import Task

HIDDEN = ("graders", "solution", "task.yaml")
"""Kept out of a task's image build context."""


def _hidden(root: Path) -> Callable[[str, list[str]], list[str]]:
    def ignore(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n in HIDDEN] if Path(folder) == root else []

    return ignore


def image_tag(task: Task) -> str:
    """The tag a task's own image is built under."""
    return f"termgym/task-{task.id}:v{task.spec.version}"


def task_image(task: Task, build: bool = True) -> str:
    """The image to start the task's sandboxes from, building it first if the task has a
    Dockerfile (docker's layer cache makes a rebuild take about a second).

    Raises:
        ImageError: the Dockerfile is not named `Dockerfile` at the task root, or the build failed.
    """
    if task.spec.dockerfile is None:
        return task.spec.image or BASE_IMAGE
    if task.spec.dockerfile != "Dockerfile":
        raise ImageError(
            f"task {task.id!r}: expected `dockerfile: Dockerfile` (at the task "
            f"folder's root), found {task.spec.dockerfile!r}"
        )
    tag = image_tag(task)
    if build:
        from termgym.sandbox import build_image

        with tempfile.TemporaryDirectory(prefix="termgym-context-") as context:
            # The build context leaves out what the agent must never see in the image.
            shutil.copytree(
                task.root, context, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*HIDDEN)
            )
            build_image(Path(context), tag)
    return tag
