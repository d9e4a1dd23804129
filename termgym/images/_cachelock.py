"""Cache entries that several termgym processes may make at once: one makes it, the others
wait for it, and nothing is removed from under another.

A test session, two runs and a vector env's workers share one cache (`cache_dir()`) and one
Docker engine. An entry (a root filesystem, a stand-in base, an image of a tag) is made
under `making(target)`: a thread lock and an flock on `<target>.lock` beside it, so one
thread of one process makes it and the others find it made. What is made goes into a
staging folder named by its process (`staging_for`) and is renamed into place whole;
staging folders of processes that are gone, and a target a killed build left half made,
are cleared under the lock first (`clear`), their mounts (debootstrap mounts /proc in its
target) unmounted before anything below them is removed.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from termgym.errors import ImageError
from termgym.isolation import unmount_below

_targets_lock = threading.Lock()
_target_locks: dict[Path, threading.Lock] = {}


@contextmanager
def making(target: Path) -> Iterator[None]:
    """One thread of any process makes `target` at a time; the others wait for it (the
    first sandboxes of a new image, started from several threads at once, or from several
    processes: an AsyncVectorEnv's workers on a fresh machine, two runs of imported tasks).
    A lock file beside it, held with flock, orders the processes: without it each made a
    copy of its own, and one that found the target missing as another's copy landed deleted
    the copy in use."""
    with _targets_lock:
        lock = _target_locks.setdefault(target, threading.Lock())
    with lock:
        target.parent.mkdir(parents=True, exist_ok=True)
        held = os.open(
            target.with_name(target.name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
        )
        try:
            fcntl.flock(held, fcntl.LOCK_EX)
            yield
        finally:
            os.close(held)


def lock_name(key: str) -> str:
    """A file name for a lock keyed by `key` (a tag: `termgym/tb-x:1` -> `termgym_tb-x_1`)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", key)


def staging_for(target: Path) -> Path:
    """This process's staging folder for `target` (beside it, renamed into place when done),
    after clearing those of processes that are gone. Call it under `making(target)`."""
    for old in target.parent.glob(target.name + ".tmp*"):
        pid = old.name.rsplit(".tmp", 1)[-1]
        if not pid.isdigit() or int(pid) == os.getpid() or not Path(f"/proc/{pid}").exists():
            clear(old)
    return target.with_name(f"{target.name}.tmp{os.getpid()}")


def clear(folder: Path) -> None:
    """Remove `folder` and everything below it, unmounting what is mounted there first.

    Raises:
        ImageError: something below it stays mounted (nothing was removed then: removing
            through a mount would delete what it shows).
    """
    if not folder.exists() and not folder.is_symlink():
        return
    left = unmount_below(str(folder))
    if left:
        raise ImageError(
            f"Expected to remove {folder} (a build that did not finish), but {left[0]} stays "
            "mounted below it; unmount it (`umount -l`) and try again."
        )
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder, ignore_errors=True)
    else:
        folder.unlink(missing_ok=True)


def settle(staging: Path, target: Path) -> None:
    """Move the finished `staging` into place as `target` (which, under the lock, is absent
    or a half-made one: cleared first)."""
    clear(target)
    staging.rename(target)
