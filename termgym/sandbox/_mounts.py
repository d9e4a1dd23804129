"""Mounting and unmounting through the system calls, not the mount(8) and umount(8) programs.

A bwrap sandbox's root is a tmpfs and an overlay (two mounts, two unmounts); starting the
util-linux programs for them cost about a quarter of the machine's CPU of a short episode.
"""

from __future__ import annotations

import ctypes
import os

_LIBC = ctypes.CDLL(None, use_errno=True)
MS_NOSUID = 2
MS_NODEV = 4
MNT_DETACH = 2


def mount(fstype: str, target: str, *, options: str = "", flags: int = 0) -> str:
    """Mount a `fstype` filesystem (its source named as the type) at `target`.

    Returns "" on success, else why not (the error's text): a caller falls back on it.
    """
    done = _LIBC.mount(
        fstype.encode(), os.fsencode(target), fstype.encode(), ctypes.c_ulong(flags),
        options.encode() if options else None,
    )  # fmt: skip
    if done == 0:
        return ""
    errno = ctypes.get_errno()
    return f"mount -t {fstype} {target}: {os.strerror(errno)}"


def unmount(target: str) -> bool:
    """Unmount `target`, lazily if it is busy; False if neither worked."""
    if _LIBC.umount2(os.fsencode(target), 0) == 0:
        return True
    return _LIBC.umount2(os.fsencode(target), MNT_DETACH) == 0
