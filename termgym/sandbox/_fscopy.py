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
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from termgym.errors import ArchiveTooLarge, SandboxError

MAX_HOPS = 40
"""Symlinks followed while resolving one path (as the kernel's ELOOP limit)."""

ID_RANGE = 65536
NOBODY = 65534

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _components(path: str) -> list[str]:
    return [p for p in PurePosixPath(path).parts if p not in ("/", ".", "")]


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
    root: Path, paths: Sequence[str], out: BinaryIO, *, limit: int, uid_base: int = 0
) -> int:
    """Write a tar of the sandbox `paths` (absolute; missing ones are skipped) to `out`.

    Symlinks are stored as symlinks, hard links as links, fifos as fifos; sockets and
    devices are left out. Returns the bytes of content written.

    Raises:
        ArchiveTooLarge: the content passed `limit` bytes (512 bytes count per entry).
    """
    budget = _Budget(limit)
    seen: dict[tuple[int, int], str] = {}
    root_fd = os.open(root, _DIR)
    try:
        with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for path in paths:
                try:
                    parent, name = resolve_parent(root_fd, path, create=False)
                except (FileNotFoundError, NotADirectoryError):
                    continue  # a path the agent removed is simply not there
                try:
                    arcname = "/".join(_components(path))
                    _export_entry(tar, parent, name, arcname, budget, seen, uid_base)
                except FileNotFoundError:
                    pass
                finally:
                    os.close(parent)
    finally:
        os.close(root_fd)
    return budget.used


class _Budget:
    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0

    def spend(self, size: int) -> None:
        self.used += size + 512
        if self.used > self.limit:
            raise ArchiveTooLarge(
                f"The sandbox's files to copy passed the limit of {self.limit >> 20} MiB."
            )


def _export_entry(
    tar: tarfile.TarFile,
    parent: int,
    name: str,
    arcname: str,
    budget: _Budget,
    seen: dict[tuple[int, int], str],
    base: int,
) -> None:
    info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    member = tarfile.TarInfo(arcname)
    member.mode = stat.S_IMODE(info.st_mode)
    member.uid, member.gid = _sandbox_id(info.st_uid, base), _sandbox_id(info.st_gid, base)
    member.mtime = int(info.st_mtime)
    kind = stat.S_IFMT(info.st_mode)
    if kind == stat.S_IFDIR:
        budget.spend(0)
        member.type = tarfile.DIRTYPE
        tar.addfile(member)
        fd = os.open(name, _DIR, dir_fd=parent)
        try:
            for child in sorted(os.listdir(fd)):
                with contextlib.suppress(FileNotFoundError):
                    _export_entry(tar, fd, child, f"{arcname}/{child}", budget, seen, base)
        finally:
            os.close(fd)
        return
    if kind == stat.S_IFLNK:
        budget.spend(0)
        member.type = tarfile.SYMTYPE
        member.linkname = os.readlink(name, dir_fd=parent)
        tar.addfile(member)
        return
    if kind == stat.S_IFIFO:
        budget.spend(0)
        member.type = tarfile.FIFOTYPE
        tar.addfile(member)
        return
    if kind != stat.S_IFREG:
        return  # sockets and devices do not travel
    key = (info.st_dev, info.st_ino)
    if info.st_nlink > 1 and key in seen:
        budget.spend(0)
        member.type = tarfile.LNKTYPE
        member.linkname = seen[key]
        tar.addfile(member)
        return
    seen[key] = arcname
    budget.spend(info.st_size)
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    with os.fdopen(fd, "rb") as handle:
        member.size = os.fstat(handle.fileno()).st_size
        tar.addfile(member, _Exact(handle, member.size))


class _Exact(io.RawIOBase):
    """Exactly `size` bytes of `handle` (zero-padded if the file shrank while being read)."""

    def __init__(self, handle: io.BufferedReader, size: int) -> None:
        self.handle, self.left = handle, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self.left <= 0:
            return 0
        view = memoryview(buffer)[: self.left]
        got = self.handle.readinto(view) or 0
        if got == 0:
            got = len(view)
            view[:got] = bytes(got)
        self.left -= got
        return got


def import_tree(root: Path, archive: BinaryIO, *, uid_base: int = 0, keep_ids: bool = True) -> None:
    """Unpack a tar into the sandbox root; no member is written through a symlink.

    Parents resolve inside the root (the image's own `/bin -> usr/bin` works); an entry
    already there that is not a folder is replaced, never written through. Owners are the
    members' ids shifted by `uid_base` (or the sandbox's root with `keep_ids=False`).

    Raises:
        SandboxError: a member escapes the root or cannot be written.
    """
    root_fd = os.open(root, _DIR)
    try:
        with tarfile.open(fileobj=archive, mode="r|*") as tar:
            for member in tar:
                _import_member(root_fd, tar, member, uid_base, keep_ids)
    except tarfile.TarError as exc:
        raise SandboxError(f"Could not unpack an archive into the sandbox: {exc}") from exc
    finally:
        os.close(root_fd)


def _import_member(
    root_fd: int, tar: tarfile.TarFile, member: tarfile.TarInfo, base: int, keep_ids: bool
) -> None:
    if member.name.startswith("/") or ".." in PurePosixPath(member.name).parts:
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
                _write_file(tar, member, parent, name)
            else:
                return  # devices are never made
        os.chown(name, uid, gid, dir_fd=parent, follow_symlinks=False)
        if not member.issym():
            os.chmod(name, member.mode & 0o7777, dir_fd=parent)
    except OSError as exc:
        raise SandboxError(f"Could not write {member.name!r} into the sandbox: {exc}") from exc
    finally:
        os.close(parent)


def _write_file(tar: tarfile.TarFile, member: tarfile.TarInfo, parent: int, name: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o600, dir_fd=parent)
    with os.fdopen(fd, "wb") as handle:
        source = tar.extractfile(member)
        if source is not None:
            while chunk := source.read(1 << 20):
                handle.write(chunk)


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


def copy_in(root: Path, src: Path, dest: str, *, uid_base: int = 0) -> None:
    """Copy the host file or folder `src` to the sandbox path `dest` (which names the copy)."""
    if not src.exists():
        raise SandboxError(f"Expected {src} to exist to copy it in; found nothing there.")
    import tempfile

    with tempfile.SpooledTemporaryFile(max_size=8 << 20) as spool:
        with tarfile.open(fileobj=spool, mode="w") as tar:
            tar.add(str(src), arcname="/".join(_components(dest)), filter=_as_root)
        spool.seek(0)
        import_tree(root, spool, uid_base=uid_base)  # type: ignore[arg-type]


def copy_out(root: Path, src: str, dest: Path, *, uid_base: int = 0, limit: int = 1 << 40) -> None:
    """Copy the sandbox path `src` to the host path `dest` (which names the copy)."""
    import shutil
    import tempfile

    with (
        tempfile.TemporaryDirectory(prefix="termgym-out-") as tmp,
        tempfile.TemporaryFile() as spool,
    ):
        export_tree(root, [src], spool, limit=limit, uid_base=uid_base)
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
