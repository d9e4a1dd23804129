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


def mounts_below(folder: str) -> list[str]:
    """The mount points at or below `folder` in this process's mount table, deepest first."""
    root = os.path.realpath(folder).rstrip("/") + "/"
    found = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as table:
            for line in table:
                point = _unescape(line.split(" ", 5)[4])
                if (point.rstrip("/") + "/").startswith(root):
                    found.append(point)
    except OSError:
        return []
    return sorted(set(found), key=lambda p: p.count("/"), reverse=True)


def unmount_below(folder: str) -> list[str]:
    """Unmount everything mounted at or below `folder` (what a build killed halfway left:
    debootstrap's /proc in its target); the mount points still there after."""
    for point in mounts_below(folder):
        unmount(point)
    return mounts_below(folder)


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in a path as octal escapes."""
    return (
        field.encode("utf-8", "surrogateescape")
        .decode("unicode_escape")
        .encode("latin-1")
        .decode("utf-8", "surrogateescape")
    )
