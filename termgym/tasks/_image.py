"""The image a task runs in: the one it names, or one built from its Dockerfile."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

from termgym.errors import ImageError
from termgym.images import BASE_IMAGE
from termgym.tasks._loader import Task

HIDDEN = ("graders", "solution", "task.yaml")
"""Kept out of a task's image build context."""


def _context_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:12]


def image_tag(task: Task) -> str:
    """The tag a task's own image is built under: by version for a Dockerfile at the task
    root, by content for one in a build-context folder (imported tasks)."""
    dockerfile = task.spec.dockerfile
    if dockerfile and Path(dockerfile).parent != Path("."):
        return f"termgym/task-{task.id}:c{_context_hash(task.path(str(Path(dockerfile).parent)))}"
    return f"termgym/task-{task.id}:v{task.spec.version}"


def _local_bases(dockerfile: Path) -> None:
    """Build the local stand-ins a Dockerfile's FROM lines name (imported tasks)."""
    from termgym.images import ensure_local_base, is_local_base

    for line in dockerfile.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].upper() == "FROM":
            base = is_local_base(words[1])
            if base is not None:
                ensure_local_base(base)


def task_image(task: Task, build: bool = True) -> str:
    """The image to start the task's sandboxes from, building it first if the task has a
    Dockerfile (docker's layer cache makes a rebuild take about a second).

    Raises:
        ImageError: the Dockerfile is not named `Dockerfile` at the task root, or the build failed.
    """
    if task.spec.dockerfile is None:
        return task.spec.image or BASE_IMAGE
    dockerfile = Path(task.spec.dockerfile)
    if dockerfile.name != "Dockerfile" or len(dockerfile.parts) > 2 or ".." in dockerfile.parts:
        raise ImageError(
            f"task {task.id!r}: expected `dockerfile: Dockerfile` (at the task folder's root) "
            f"or `<folder>/Dockerfile` (that folder is the build context), found "
            f"{task.spec.dockerfile!r}"
        )
    tag = image_tag(task)
    if build and dockerfile.parent != Path("."):
        from termgym.images import build_image

        _local_bases(task.path(str(dockerfile)))
        build_image(task.path(str(dockerfile.parent)), tag)
        return tag
    if build:
        from termgym.images import build_image

        with tempfile.TemporaryDirectory(prefix="termgym-context-") as context:
            # The build context leaves out what the agent must never see in the image.
            shutil.copytree(
                task.root, context, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*HIDDEN)
            )
            build_image(Path(context), tag)
    return tag
