"""Task folders travel to the nodes with the work: a node needs termgym installed, not the
driver's files.

The driver packs each task folder it runs into a `TaskBundle` (a gzipped tar, named by its
content hash); a node unpacks a bundle once into its cache folder and resolves the task id
there, ahead of any task of the same id the node has itself.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from termgym._task_paths import add_folder
from termgym.errors import TaskError

MAX_BUNDLE_BYTES = 64 * 1024 * 1024
"""A task folder larger than this (packed) is refused: ship it with the nodes' image."""


@dataclass(frozen=True)
class TaskBundle:
    """One task folder, packed: its id, the content hash, the gzipped tar."""

    task_id: str
    digest: str
    data: bytes


def bundle_task(task_id: str, folder: Path) -> TaskBundle:
    """Pack a task folder (every file, in a stable order, without owners or times)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        for path in sorted(folder.rglob("*")):
            if "__pycache__" in path.parts:
                continue
            info = tar.gettarinfo(str(path), arcname=f"{task_id}/{path.relative_to(folder)}")
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            if info.isfile():
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
            elif info.isdir() or info.issym():
                tar.addfile(info)
    data = buffer.getvalue()
    if len(data) > MAX_BUNDLE_BYTES:
        raise TaskError(
            f"task {task_id!r} packs to {len(data):,} bytes; expected at most "
            f"{MAX_BUNDLE_BYTES:,} to ship to Ray nodes"
        )
    return TaskBundle(task_id, hashlib.sha256(data).hexdigest()[:20], data)


def unpack_bundles(bundles: Iterable[TaskBundle], cache: Path | None = None) -> list[Path]:
    """Unpack bundles not unpacked yet on this node, and make their task ids resolve there.

    Returns the task folders. Unpacking goes through a staging folder renamed into place, so
    two workers of one node unpacking at once never see half a task.
    """
    if cache is None:
        from termgym.images import cache_dir

        cache = cache_dir() / "cluster-tasks"
    folders = []
    for bundle in bundles:
        root = cache / bundle.digest
        if not (root / bundle.task_id).is_dir():
            cache.mkdir(mode=0o700, parents=True, exist_ok=True)  # holds hidden graders: owner only
            staging = cache / f".{bundle.digest}.{_unique()}"
            staging.mkdir()
            with tarfile.open(fileobj=io.BytesIO(bundle.data), mode="r:gz") as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(staging, filter="data")
                else:  # Python before 3.11.4; the bundle is the driver's own
                    tar.extractall(staging)  # noqa: S202
            try:
                staging.rename(root)
            except OSError:  # another worker won the race: its copy is the same content
                import shutil

                shutil.rmtree(staging, ignore_errors=True)
        add_folder(root)
        folders.append(root / bundle.task_id)
    return folders


def _unique() -> str:
    import os
    import uuid

    return f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
