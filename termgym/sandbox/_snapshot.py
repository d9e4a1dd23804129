"""Snapshot grading's host side: the agent's final filesystem, as a verifier grades it.

An agent sandbox's root is an overlay: the image's layers below, the agent's writable layer
on top (bwrap: its tmpfs upper folder; docker: the container's overlay2 UpperDir). After the
sandbox is frozen those folders hold exactly what the agent's machine became. A verifier of
a task graded on a snapshot (`grading.filesystem: snapshot`) gets them as the lower layers
of an overlay of its own, mounted on the host with a fresh upper folder on a tmpfs of the
task's disk limit (what grading writes is bounded and thrown away), and bound into the
verifier at SNAPSHOT_PATH. The verifier's own root stays the clean image: the grading
runner never runs on the snapshot; the tests run in it, in a nest whose root it is
(termgym/verifier/nest.py, docs/security.md "Snapshot grading").

Nothing here reads the agent's files: the layers are only mounted (what the agent made or
changed is listed by `termgym.sandbox.list_changes`, without following its links).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from termgym.errors import SandboxStartError
from termgym.isolation import MS_NODEV, MS_NOSUID, mount, unmount

SNAPSHOT_PATH = "/var/lib/termgym-snapshot"
"""Where a verifier finds the snapshot it grades (its root stays the clean image)."""

CHANGED_LIMIT = 200_000
"""What the agent made or changed that a snapshot grading lists for its tests at most."""


@dataclass(frozen=True)
class SnapshotLayers:
    """The folders (on this host) an agent's final filesystem is made of, top first: the
    agent's writable layer, then the image's layers."""

    layers: tuple[str, ...]

    def handle(self) -> str:
        """What a verifier's `SandboxConfig.snapshot_of` carries."""
        return json.dumps(list(self.layers))

    @classmethod
    def parse(cls, handle: str) -> SnapshotLayers:
        """The layers a `handle()` names.

        Raises:
            SandboxStartError: the handle is not a list of folders on this host.
        """
        try:
            layers = json.loads(handle)
        except ValueError:
            layers = None
        if (
            not isinstance(layers, list)
            or not layers
            or not all(isinstance(p, str) and p.startswith("/") for p in layers)
        ):
            raise SandboxStartError(
                f"expected a snapshot handle naming the agent's layers, found {handle[:200]!r}"
            )
        missing = [p for p in layers if not os.path.isdir(p)]
        if missing:
            raise SandboxStartError(
                f"the snapshot's layers are not folders on this host (a remote engine?): "
                f"{missing[:3]}"
            )
        return cls(tuple(layers))

    @property
    def top(self) -> str:
        """The agent's writable layer."""
        return self.layers[0]


class SnapshotMount:
    """A writable overlay of `layers` at `folder/merged`, its upper folder on a tmpfs of
    `size_mb` owned by `owner` (the verifier's root on the host)."""

    def __init__(self, layers: SnapshotLayers, folder: Path, *, size_mb: int, owner: int) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o711)
        self.disk, self.merged, links = folder / "disk", folder / "merged", folder / "l"
        for made in (self.disk, self.merged, links):
            made.mkdir(exist_ok=True)
        problem = mount(
            "tmpfs", str(self.disk), options=f"size={size_mb}m,mode=0711,nr_inodes=1000000",
        )  # fmt: skip
        if problem:
            raise SandboxStartError(f"Could not make the snapshot's scratch space: {problem}")
        upper, work = self.disk / "upper", self.disk / "work"
        upper.mkdir()
        work.mkdir()
        os.chown(upper, owner, owner)
        upper.chmod(0o755)
        # short names for the layers: an overlay's options must fit in one page
        lower = []
        for index, layer in enumerate(layers.layers):
            (links / str(index)).symlink_to(layer)
            lower.append(str(links / str(index)))
        options = f"lowerdir={':'.join(lower)},upperdir={upper},workdir={work}"
        problem = mount("overlay", str(self.merged), options=options, flags=MS_NOSUID | MS_NODEV)
        if problem:
            self.close()
            raise SandboxStartError(f"Could not mount the agent's snapshot: {problem}")

    def close(self) -> None:
        """Unmount and delete (idempotent)."""
        for mounted in (self.merged, self.disk):
            if os.path.ismount(mounted):
                unmount(str(mounted))
        shutil.rmtree(self.folder, ignore_errors=True)
