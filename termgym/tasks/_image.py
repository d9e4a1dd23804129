"""The image a task runs in: the one it names, or one built from its Dockerfile."""

from __future__ import annotations

from termgym.errors import ImageError
from termgym.sandbox import BASE_IMAGE
from termgym.tasks._loader import Task


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
        from termgym.images import build_image

        build_image(task.root, tag)
    return tag
