"""Disk limits for docker sandboxes: the engine's quota, a filesystem of their size, or a watchdog.

What bounds a container's writable layer, best first (`DockerSandbox.disk_limit`):

- "engine": Docker's own `--storage-opt size`, which it enforces only on overlay2 over XFS
  with project quotas (and btrfs, zfs). It is asked once per engine; an engine that refuses
  it (overlay2 over ext4, or XFS on a kernel without XFS quotas, as here) is remembered.
- "filesystem": termgym, as root beside a local overlay2 engine, puts the layer on a
  loop-mounted filesystem of the limit's size (`termgym.isolation._layerdisk`): ENOSPC at
  the limit, as on bwrap.
- "watchdog": elsewhere (termgym not root), one thread per process walks the writable layer
  (overlay2's UpperDir) of every live sandbox twice a second, summing the blocks actually
  used, and a sandbox past its limit is killed through the engine. What the agent can write
  past the limit is then bounded by half a second of its write speed, and not at all for
  `fallocate`, which takes blocks without writing them.
- "none": the layer cannot be read here (a remote engine, another storage driver).

Which one holds is said once per process (`say_disk_limit`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

DiskBound = Literal["engine", "filesystem", "watchdog", "none"]

_quota: dict[str, bool] = {}
"""Engine address -> whether it accepted `--storage-opt size`."""
_said: set[str] = set()


def engine_quota(address: str) -> bool | None:
    """Whether the engine at `address` bounds a container's layer itself (None: not asked)."""
    return _quota.get(address)


def remember_quota(address: str, accepted: bool) -> None:
    _quota[address] = accepted


def quota_option(disk_mb: int) -> dict[str, str]:
    """The create option of a layer bounded by the engine."""
    return {"size": f"{disk_mb}m"}


def refuses_quota(exc: Any) -> bool:
    """The engine's refusal of `--storage-opt size` (not some other create error)."""
    text = str(exc).lower()
    return "storage-opt" in text or "storage opt" in text or "storageopt" in text


def say_disk_limit(bound: DiskBound, why: str = "") -> None:
    """Log, once per process and kind, what bounds the docker sandboxes' disk."""
    if bound in _said:
        return
    _said.add(bound)
    if bound == "engine":
        log.info("docker disk limits: the engine's quota (--storage-opt size)")
    elif bound == "filesystem":
        log.info("docker disk limits: a filesystem of the limit's size under each layer")
    elif bound == "watchdog":
        log.warning(
            "docker disk limits: a watchdog polls each writable layer (%s); an agent can "
            "write past the limit for half a second, and fallocate past it at once; see "
            "docs/security.md",
            why or "no filesystem could be made for it",
        )
    else:
        log.warning(
            "The docker sandboxes' disk limit cannot be enforced with this engine (%s: a "
            "remote engine, or a storage driver other than overlay2); see docs/security.md.",
            why or "its containers' writable layers are not readable here",
        )


POLL_SECONDS = 0.5
MAX_ENTRIES = 1_000_000
"""Files and folders a writable layer may hold, whatever their size (inodes are disk too)."""


def usage(folder: Path, stop_at: int) -> tuple[int, int]:
    """(bytes of blocks used, entries) below `folder`; the walk stops once past `stop_at`."""
    used = entries = 0
    stack = [str(folder)]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as listing:
                for entry in listing:
                    entries += 1
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    used += info.st_blocks * 512
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(entry.path)
                    if used > stop_at or entries > MAX_ENTRIES:
                        return used, entries
        except OSError:
            continue
    return used, entries


@dataclass
class _Watched:
    folder: Path
    limit: int
    on_exceeded: Callable[[str], None]
    fired: bool = False


class DiskWatch:
    """Polls the writable layers registered with `watch` until they are `forget`-ten."""

    def __init__(self, poll: float = POLL_SECONDS) -> None:
        self.poll = poll
        self._watched: dict[int, _Watched] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(
        self, key: int, folder: str | None, limit_mb: int, on_exceeded: Callable[[str], None]
    ) -> bool:
        """Watch `folder` (a writable layer on this host); False if it cannot be read here."""
        if not folder or not os.path.isdir(folder):
            return False
        with self._lock:
            self._watched[key] = _Watched(Path(folder), limit_mb << 20, on_exceeded)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="termgym-disk", daemon=True)
                self._thread.start()
        return True

    def forget(self, key: int) -> None:
        with self._lock:
            self._watched.pop(key, None)

    def check_now(self) -> None:
        """One pass over every watched layer (the thread calls it; tests may too)."""
        with self._lock:
            items = list(self._watched.values())
        for item in items:
            if item.fired:
                continue
            used, entries = usage(item.folder, item.limit)
            if used > item.limit or entries > MAX_ENTRIES:
                item.fired = True
                what = (
                    f"{entries} files (the limit is {MAX_ENTRIES})"
                    if entries > MAX_ENTRIES
                    else f"{used >> 20} MiB (the limit is {item.limit >> 20} MiB)"
                )
                with contextlib.suppress(Exception):
                    item.on_exceeded(what)

    def _run(self) -> None:
        while True:
            time.sleep(self.poll)
            with self._lock:
                if not self._watched:
                    self._thread = None
                    return
            try:
                self.check_now()
            except Exception as exc:  # noqa: BLE001 - the watchdog must keep watching
                log.warning("disk watchdog pass failed: %s", exc)


_shared: DiskWatch | None = None
_shared_pid: int | None = None


def shared_watch() -> DiskWatch:
    """This process's watchdog (a forked child gets its own)."""
    global _shared, _shared_pid
    if _shared is None or _shared_pid != os.getpid():
        _shared, _shared_pid = DiskWatch(), os.getpid()
    return _shared
