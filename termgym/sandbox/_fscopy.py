"""Copies between the host and a sandbox's root folder that never follow the sandbox's symlinks.

A sandbox's root (a bwrap overlay, a local folder) is a host folder full of files the agent
wrote. A host-side copy that followed a symlink the agent planted (`/tmp -> /etc` on the
host) would read or write host files. Here every path is resolved inside the root, as the
sandbox itself would resolve it (`resolve`: an absolute symlink restarts at the root, `..`
stops at it), every open uses O_NOFOLLOW on the last component, and walks go through
directory file descriptors, so nothing is ever looked up by a host path below the root.

Archives are plain tar streams in the sandbox's own uid space: `uid_base` shifts owners
between it and the host (a bwrap sandbox's root is host uid `uid_base`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from termgym.errors import SandboxError
from termgym.sandbox._base import FileTree
from termgym.sandbox._copylimits import HOST_COPY, CopyBudget, CopyLimits

MAX_HOPS = 40
"""Symlinks followed while resolving one path (as the kernel's ELOOP limit)."""

ID_RANGE = 65536
NOBODY = 65534

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _components(path: str) -> list[str]:
    """The names along `path` from the sandbox's root: empty names and "." left out, ".."
    kept (a walk takes it inside the root). Not pathlib's parts, which keeps a leading "//"
    as one part: looked up relative to a folder's descriptor, "//" is the host's root, and
    an agent's link to "//etc" would have carried the host's walks out of the sandbox."""
    return [part for part in path.split("/") if part not in ("", ".")]


def resolve_parent(root_fd: int, path: str, *, create: bool, uid: int = 0) -> tuple[int, str]:
    """(fd of the folder holding `path`'s last component, that component), resolved in-root.

    Parents are resolved as the sandbox would (symlinks followed inside the root only);
    with `create`, missing parents are made (owned by host `uid`). The caller closes the fd.

    Raises:
        FileNotFoundError: a parent is missing (and `create` is off).
        NotADirectoryError: a parent is not a folder.
        SandboxError: too many symlinks, or the path is the root itself.
    """
    parts = _components(path)
    if not parts:
        raise SandboxError(f"Expected a path below the sandbox root; got {path!r}.")
    return _walk(root_fd, parts[:-1], create=create, uid=uid), parts[-1]


def _walk(root_fd: int, parts: list[str], *, create: bool, uid: int) -> int:
    stack = [os.dup(root_fd)]  # folders walked so far, for ".."
    remaining = list(parts)
    hops = 0
    try:
        while remaining:
            name = remaining.pop(0)
            if name == "..":
                if len(stack) > 1:
                    os.close(stack.pop())
                continue
            current = stack[-1]
            try:
                info = os.stat(name, dir_fd=current, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o755, dir_fd=current)
                os.chown(name, uid, uid, dir_fd=current, follow_symlinks=False)
                info = os.stat(name, dir_fd=current, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                hops += 1
                if hops > MAX_HOPS:
                    raise SandboxError(
                        f"Too many symlinks resolving {'/'.join(parts)!r} in the sandbox."
                    )
                target = os.readlink(name, dir_fd=current)
                if target.startswith("/"):
                    for fd in stack:
                        os.close(fd)
                    stack = [os.dup(root_fd)]
                remaining[:0] = _components(target)
                continue
            if not stat.S_ISDIR(info.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "not a folder in the sandbox", name)
            stack.append(os.open(name, _DIR, dir_fd=current))
        return stack.pop()
    finally:
        for fd in stack:
            os.close(fd)


def _sandbox_id(host_id: int, base: int) -> int:
    if base == 0:
        return host_id
    return host_id - base if base <= host_id < base + ID_RANGE else NOBODY


def export_tree(
    root: Path, paths: Sequence[str], out: BinaryIO, *, budget: CopyBudget, uid_base: int = 0
) -> int:
    """Write a tar of the sandbox `paths` (absolute; missing ones are skipped) to `out`.

    Symlinks are stored as symlinks, hard links as links, fifos as fifos; sockets and
    devices are left out. The walk holds one descriptor per folder level (no recursion, so
    a deep tree costs no stack) and counts every entry against `budget`. Returns the
    budget's bytes so far.

    Raises:
        ArchiveTooLarge: the copy passed one of the budget's limits.
    """
    seen: dict[tuple[int, int], str] = {}
    root_fd = os.open(root, _DIR)
    try:
        with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            walk = _Walk(tar, budget, seen, uid_base)
            for path in paths:
                try:
                    parent, name = resolve_parent(root_fd, path, create=False)
                except (FileNotFoundError, NotADirectoryError):
                    continue  # a path the agent removed is simply not there
                try:
                    walk.tree(parent, name, "/".join(_components(path)))
                finally:
                    os.close(parent)
    finally:
        os.close(root_fd)
    return budget.used


class _Walk:
    """An export's walk: entries written in sorted order, folders entered by descriptor."""

    def __init__(
        self,
        tar: tarfile.TarFile,
        budget: CopyBudget,
        seen: dict[tuple[int, int], str],
        base: int,
    ) -> None:
        self.tar, self.budget, self.seen, self.base = tar, budget, seen, base

    def tree(self, parent: int, name: str, arcname: str) -> None:
        """Write `name` (in the folder `parent`) and, if it is a folder, all below it."""
        stack: list[tuple[int, str, list[str]]] = []
        try:
            with contextlib.suppress(FileNotFoundError):
                entered = self.entry(parent, name, arcname)
                if entered is not None:
                    stack.append(entered)
            while stack:
                fd, base, names = stack[-1]
                if not names:
                    os.close(fd)
                    stack.pop()
                    continue
                child = names.pop()
                with contextlib.suppress(FileNotFoundError):
                    entered = self.entry(fd, child, f"{base}/{child}")
                    if entered is not None:
                        stack.append(entered)
        finally:
            for fd, _, _ in stack:
                os.close(fd)

    def entry(self, parent: int, name: str, arcname: str) -> tuple[int, str, list[str]] | None:
        """Write one entry; for a folder, return (its fd, its name, its children, last
        first) for the walk to enter."""
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        kind = stat.S_IFMT(info.st_mode)
        if kind not in (stat.S_IFDIR, stat.S_IFLNK, stat.S_IFIFO, stat.S_IFREG):
            return None  # sockets and devices do not travel
        member = tarfile.TarInfo(arcname)
        member.mode = stat.S_IMODE(info.st_mode)
        member.uid = _sandbox_id(info.st_uid, self.base)
        member.gid = _sandbox_id(info.st_gid, self.base)
        member.mtime = int(info.st_mtime)
        key = (info.st_dev, info.st_ino)
        linked = kind == stat.S_IFREG and info.st_nlink > 1 and key in self.seen
        size = info.st_size if kind == stat.S_IFREG and not linked else 0
        self.budget.spend(arcname, size)
        if kind == stat.S_IFDIR:
            member.type = tarfile.DIRTYPE
            self.tar.addfile(member)
            fd = os.open(name, _DIR, dir_fd=parent)
            try:
                names = _listing(fd, self.budget)
            except BaseException:
                os.close(fd)
                raise
            return fd, arcname, names
        if kind == stat.S_IFLNK:
            member.type = tarfile.SYMTYPE
            member.linkname = os.readlink(name, dir_fd=parent)
            self.tar.addfile(member)
        elif kind == stat.S_IFIFO:
            member.type = tarfile.FIFOTYPE
            self.tar.addfile(member)
        elif linked:
            member.type = tarfile.LNKTYPE
            member.linkname = self.seen[key]
            self.tar.addfile(member)
        else:
            fd = _open_file(parent, name, key)
            self.seen[key] = arcname
            with os.fdopen(fd, "rb") as handle:
                member.size = size
                self.tar.addfile(member, _Exact(handle, size, self.budget))
        return None


_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _open_file(parent: int, name: str, key: tuple[int, int]) -> int:
    """The regular file `name` looked at as `key` (device, inode), opened for reading; one
    swapped since (a live agent's processes still run in live-state grading) is gone for
    the walk (FileNotFoundError). Opened without blocking: a fifo put in its place would
    hold the open, and the grading with it, until something wrote to it."""
    fd = os.open(name, _FILE, dir_fd=parent)
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != key:
        os.close(fd)
        raise FileNotFoundError(errno.ENOENT, "swapped while the walk looked at it", name)
    return fd


def _listing(fd: int, budget: CopyBudget) -> list[str]:
    """The names in the folder `fd`, sorted last first; reading stops (ArchiveTooLarge) as
    soon as they would pass the budget's count of files."""
    room = budget.limits.files - budget.files
    names: list[str] = []
    with os.scandir(fd) as listing:
        for entry in listing:
            names.append(entry.name)
            if len(names) > room:
                raise budget.too_many_files()
    names.sort(reverse=True)
    return names


class _Exact(io.RawIOBase):
    """Exactly `size` bytes of `handle` (zero-padded if the file shrank while being read),
    within the copy's time."""

    def __init__(self, handle: io.BufferedReader, size: int, budget: CopyBudget) -> None:
        self.handle, self.left, self.budget = handle, size, budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self.left <= 0:
            return 0
        self.budget.check_time()
        view = memoryview(buffer)[: self.left]
        got = self.handle.readinto(view) or 0
        if got == 0:
            got = len(view)
            view[:got] = bytes(got)
        self.left -= got
        return got


def import_tree(
    root: Path,
    archive: BinaryIO,
    *,
    uid_base: int = 0,
    keep_ids: bool = True,
    budget: CopyBudget | None = None,
) -> None:
    """Unpack a tar into the sandbox root; no member is written through a symlink.

    Parents resolve inside the root (the image's own `/bin -> usr/bin` works); an entry
    already there that is not a folder is replaced, never written through. Owners are the
    members' ids shifted by `uid_base` (or the sandbox's root with `keep_ids=False`). Runs
    of zeros are left as holes. With `budget`, the unpacking keeps to its time.

    Raises:
        SandboxError: a member escapes the root or cannot be written.
        ArchiveTooLarge: the unpacking took longer than `budget` allows.
    """
    root_fd = os.open(root, _DIR)
    try:
        with tarfile.open(fileobj=archive, mode="r|*") as tar:
            for member in tar:
                if budget is not None:
                    budget.check_time()
                _import_member(root_fd, tar, member, uid_base, keep_ids, budget)
    except tarfile.TarError as exc:
        raise SandboxError(f"Could not unpack an archive into the sandbox: {exc}") from exc
    finally:
        os.close(root_fd)


def _import_member(
    root_fd: int,
    tar: tarfile.TarFile,
    member: tarfile.TarInfo,
    base: int,
    keep_ids: bool,
    budget: CopyBudget | None,
) -> None:
    if member.name.startswith("/") or ".." in member.name.split("/"):
        raise SandboxError(f"Expected archive members below the root; got {member.name!r}.")
    if not _components(member.name):
        return
    uid = base + (member.uid if keep_ids else 0)
    gid = base + (member.gid if keep_ids else 0)
    try:
        parent, name = resolve_parent(root_fd, member.name, create=True, uid=base)
    except OSError as exc:
        raise SandboxError(f"Could not place {member.name!r} in the sandbox: {exc}") from exc
    try:
        existing = _lstat(parent, name)
        if member.isdir():
            if existing is not None and not stat.S_ISDIR(existing.st_mode):
                os.unlink(name, dir_fd=parent)
                existing = None
            if existing is None:
                os.mkdir(name, 0o700, dir_fd=parent)
        else:
            if existing is not None:
                _remove(parent, name, existing)
            if member.issym():
                os.symlink(member.linkname, name, dir_fd=parent)
            elif member.islnk():
                link_parent, link_name = resolve_parent(root_fd, member.linkname, create=False)
                try:
                    os.link(link_name, name, src_dir_fd=link_parent, dst_dir_fd=parent,
                            follow_symlinks=False)  # fmt: skip
                finally:
                    os.close(link_parent)
                return
            elif member.isfifo():
                os.mkfifo(name, 0o600, dir_fd=parent)
            elif member.isfile():
                _write_file(tar, member, parent, name, budget)
            else:
                return  # devices are never made
        os.chown(name, uid, gid, dir_fd=parent, follow_symlinks=False)
        if not member.issym():
            os.chmod(name, member.mode & 0o7777, dir_fd=parent)
    except OSError as exc:
        raise SandboxError(f"Could not write {member.name!r} into the sandbox: {exc}") from exc
    finally:
        os.close(parent)


def _write_file(
    tar: tarfile.TarFile,
    member: tarfile.TarInfo,
    parent: int,
    name: str,
    budget: CopyBudget | None,
) -> None:
    """Write a member's content, leaving chunks of zeros as holes (a sparse file the
    agent made stays sparse in a verifier of this backend)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o600, dir_fd=parent)
    try:
        source = tar.extractfile(member)
        if source is None:
            return
        while chunk := source.read(_CHUNK):
            if budget is not None:
                budget.check_time()
            if chunk == _ZERO_CHUNK[: len(chunk)]:
                os.lseek(fd, len(chunk), os.SEEK_CUR)
                continue
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        os.ftruncate(fd, os.lseek(fd, 0, os.SEEK_CUR))
    finally:
        os.close(fd)


_CHUNK = 1 << 20
_ZERO_CHUNK = bytes(_CHUNK)


def _lstat(parent: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _remove(parent: int, name: str, info: os.stat_result) -> None:
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    fd = os.open(name, _DIR, dir_fd=parent)
    try:
        for child in os.listdir(fd):
            found = _lstat(fd, child)
            if found is not None:
                _remove(fd, child, found)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


def copy_in(root: Path, src: Path | FileTree, dest: str, *, uid_base: int = 0) -> None:
    """Copy the host file or folder `src` to the sandbox path `dest` (which names the copy),
    or a FileTree's files below `dest`."""
    if isinstance(src, FileTree):
        import_tree(root, io.BytesIO(tree_archive(src, dest)), uid_base=uid_base)
        return
    src = Path(src)
    if not src.exists():
        raise SandboxError(f"Expected {src} to exist to copy it in; found nothing there.")
    import tempfile

    with tempfile.SpooledTemporaryFile(max_size=8 << 20) as spool:
        with tarfile.open(fileobj=spool, mode="w") as tar:
            tar.add(str(src), arcname="/".join(_components(dest)), filter=_as_root)
        spool.seek(0)
        import_tree(root, spool, uid_base=uid_base)  # type: ignore[arg-type]


def tree_archive(tree: FileTree, dest: str) -> bytes:
    """A tar of `tree`'s files below `dest` (the FileTree's promises): no member for `dest`
    itself, one for each folder between (0755), then the files with their modes; root's."""
    base = "".join(part + "/" for part in _components(dest))
    folders: set[str] = set()
    now = int(time.time())
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for rel, (content, mode) in sorted(tree.files.items()):
            parts = _components(rel)
            if not parts or ".." in parts:
                raise SandboxError(f"Expected a path below the folder to copy to; got {rel!r}.")
            for end in range(1, len(parts)):
                folder = "/".join(parts[:end])
                if folder not in folders:
                    folders.add(folder)
                    tar.addfile(_root_member(base + folder, tarfile.DIRTYPE, 0o755, now))
            member = _root_member(base + "/".join(parts), tarfile.REGTYPE, mode & 0o7777, now)
            member.size = len(content)
            tar.addfile(member, io.BytesIO(content))
    return out.getvalue()


def _root_member(name: str, kind: bytes, mode: int, mtime: int) -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.mode, member.mtime = kind, mode, mtime
    return _as_root(member)


def copy_out(
    root: Path, src: str, dest: Path, *, uid_base: int = 0, limits: CopyLimits = HOST_COPY
) -> None:
    """Copy the sandbox path `src` to the host path `dest` (which names the copy)."""
    import shutil
    import tempfile

    with (
        tempfile.TemporaryDirectory(prefix="termgym-out-") as tmp,
        tempfile.TemporaryFile() as spool,
    ):
        export_tree(root, [src], spool, budget=limits.budget(), uid_base=uid_base)
        if spool.tell() == 0:
            raise SandboxError(f"Expected {src} in the sandbox; found nothing there.")
        spool.seek(0)
        with tarfile.open(fileobj=spool, mode="r") as tar:
            tar.extractall(tmp, filter="tar")
        found = Path(tmp, *_components(src))
        if not found.exists() and not found.is_symlink():
            raise SandboxError(f"Expected {src} in the sandbox; found nothing there.")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.is_dir() and found.is_dir() and not found.is_symlink():
            shutil.copytree(found, dest, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.move(str(found), dest)


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info
