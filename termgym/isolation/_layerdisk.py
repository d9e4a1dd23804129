"""A docker container's writable layer on a filesystem of its own size: the disk limit as ENOSPC.

Docker bounds a container's writable layer (`--storage-opt size`) only on overlay2 over XFS
with project quotas (a kernel built with XFS quotas), btrfs or zfs; on the common overlay2
over ext4 it refuses. Where termgym runs as root beside a local engine with overlay2, it
gives each container a filesystem of the task's disk limit instead, as the bwrap backend
does with its tmpfs: after the engine creates the container and before it starts, a sparse
ext4 image of `disk_mb` is loop-mounted over the container's layer folder (the one holding
its `diff` and `work` folders, so that the engine's overlay finds them on one filesystem).
Writing past the limit is ENOSPC, `fallocate` included, and the host's disk holds at most
what the agent wrote (the image is sparse and mounted with discard).

The engine removes the layer as usual: its removal unmounts a mount point it meets. The
image is deleted with the sandbox (`termgym gc` deletes those whose container is gone).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from termgym.isolation._mounts import unmount

LAYER_FILES = ("link", "lower")
"""What overlay2 keeps in a layer folder besides `diff` and `work` (copied onto the image)."""


def inodes_for(size_mb: int) -> int:
    """Files and folders a writable layer of `size_mb` holds (as bwrap's tmpfs)."""
    return max(size_mb, 64) * 64


class LayerDisk:
    """The image mounted over one container's layer folder; `close` unmounts and deletes it."""

    def __init__(self, layer: Path, image: Path) -> None:
        self.layer, self.image = layer, image

    @classmethod
    def make(cls, upper: str, size_mb: int, folder: Path) -> LayerDisk | str:
        """Put the (created, not started) container whose writable layer is `upper` on an
        image of `size_mb` in `folder`; the reason why not when it cannot be done here."""
        layer = Path(upper).parent
        if os.geteuid() != 0:
            return "termgym does not run as root (mounting needs it)"
        if Path(upper).name != "diff" or not all((layer / f).exists() for f in LAYER_FILES):
            return f"{upper} is not an overlay2 layer on this host"
        if any(Path(upper).iterdir()):
            return f"{upper} is not empty"
        mkfs = shutil.which("mkfs.ext4", path=os.defpath + ":/usr/sbin:/sbin")
        if mkfs is None:
            return "mkfs.ext4 (e2fsprogs) is missing"
        folder.mkdir(parents=True, exist_ok=True)
        image = folder / (layer.name + ".img")
        stage = folder / (layer.name + ".stage")
        disk = cls(layer, image)
        try:
            with open(image, "wb") as handle:
                handle.truncate(size_mb << 20)
            _run(
                [mkfs, "-q", "-F", "-m", "0", "-O", "^has_journal", "-N",
                 str(inodes_for(size_mb)), "-E", "lazy_itable_init=1,nodiscard", str(image)]
            )  # fmt: skip
            stage.mkdir(exist_ok=True)
            _run(["mount", "-o", "loop,discard,nosuid,nodev", str(image), str(stage)])
            try:
                for name in LAYER_FILES:
                    shutil.copy2(layer / name, stage / name)
                (stage / "diff").mkdir(mode=0o755)
                (stage / "work").mkdir(mode=0o700)
                with contextlib.suppress(OSError):
                    (stage / "lost+found").rmdir()
                info = layer.stat()
                os.chmod(stage, info.st_mode & 0o7777)
                _run(["mount", "--move", str(stage), str(layer)])
            except BaseException:
                unmount(str(stage))
                raise
        except (OSError, subprocess.SubprocessError) as exc:
            disk.close()
            return f"could not mount a filesystem for it: {exc}"
        finally:
            with contextlib.suppress(OSError):
                stage.rmdir()
        return disk

    def close(self) -> None:
        """Unmount the image (if the engine has not) and delete it (idempotent)."""
        if os.path.ismount(self.layer):
            unmount(str(self.layer))
        with contextlib.suppress(FileNotFoundError):
            self.image.unlink()


def remove_orphans(folder: Path, *, older_than: float = 60.0) -> list[str]:
    """Delete the images in `folder` that back no loop device (their container is gone)
    and are older than `older_than` seconds (not one being made); return their names."""
    removed: list[str] = []
    if not folder.is_dir():
        return removed
    in_use = set()
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        with contextlib.suppress(OSError):
            in_use.add(backing.read_text().strip().removesuffix(" (deleted)"))
    for image in folder.glob("*.img"):
        with contextlib.suppress(OSError):
            if str(image) in in_use or time.time() - image.stat().st_mtime < older_than:
                continue
            image.unlink()
            removed.append(image.stem)
    return removed


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
    if done.returncode != 0:
        raise subprocess.SubprocessError(
            f"{' '.join(argv[:2])} failed: {done.stderr.decode(errors='replace').strip()}"
        )
