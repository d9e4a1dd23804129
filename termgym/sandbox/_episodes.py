"""Where bwrap sandboxes keep their episode folders: `episodes/` in termgym's cache.

An episode folder holds the mount points of a sandbox's root (its tmpfs disk and the
overlay over the image), its owner's pid, and a few small files; each bwrap sandbox makes
one when it starts and deletes it when it closes. On the host's own filesystem each of
those steps is a directory operation on a journalled disk (an ext4 with online discard
made making and deleting one folder cost about a millisecond of CPU an episode). As root,
termgym mounts a tmpfs of its own at the folder the first time a process needs it, under a
lock every termgym process of the host takes, and only over an empty folder: what another
process, or an older termgym, left there is never hidden (it is used as it is, and its
garbage collected, until it is empty: the folders of processes that are gone are removed
first). Without root, or where the mount is refused, the folder is the cache's own.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

from termgym.isolation import MS_NODEV, MS_NOSUID, mount, unmount

LABELS = "labels.json"
"""In an episode folder: its sandbox's labels (the run it serves), for `termgym gc --run`."""
LOCK = "episodes.lock"
"""In the cache, beside the folder: held while a process looks at the folder and mounts."""
_READY: set[Path] = set()
"""The folders this process found ready (a mount stays for the life of the host)."""


def episodes_dir() -> Path:
    """The episode folders' parent (termgym's cache: TERMGYM_CACHE, or its default)."""
    from termgym.images import cache_dir

    return cache_dir() / "episodes"


def ready_episodes_dir() -> Path:
    """`episodes_dir()`, made (0711), and as root on a tmpfs of its own where it can be
    (the module docstring)."""
    folder = episodes_dir()
    if folder in _READY:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0 and not os.path.ismount(folder):
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        with open(os.open(folder.parent / LOCK, flags, 0o600), "rb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released as the file closes
            if not os.path.ismount(folder):
                for home in folder.iterdir():
                    if owner_gone(home, unknown=False):
                        remove_episode(home)
                if not any(folder.iterdir()):
                    mount("tmpfs", str(folder), options="mode=0711", flags=MS_NOSUID | MS_NODEV)
    folder.chmod(0o711)
    _READY.add(folder)
    return folder


def owner_gone(home: Path, *, unknown: bool) -> bool:
    """Whether the process that made the episode folder `home` has ended; `unknown` where
    the folder names none (made a moment ago, or broken)."""
    try:
        owner = int((home / "owner.pid").read_text())
    except (OSError, ValueError):
        return unknown
    return not Path(f"/proc/{owner}").exists()


def labels_of(home: Path) -> dict[str, str]:
    """The labels the sandbox of the episode folder `home` was started with ({} if unknown)."""
    try:
        found = json.loads((home / LABELS).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def remove_episode(home: Path) -> None:
    """Unmount (if mounted) and delete one episode folder."""
    for mounted in (
        home / "snap" / "merged",
        home / "snap" / "disk",
        home / "merged",
        home / "disk",
    ):
        if os.path.ismount(mounted):
            unmount(str(mounted))
    shutil.rmtree(home, ignore_errors=True)
