"""Bounds on a copy of an agent's files (bytes, entries, depth, time), and a spool that keeps holes.

What the agent leaves is the agent's: a copy of its work that would carry more bytes, more
files and folders, a deeper tree or take longer than its task allows stops with
ArchiveTooLarge, which grading scores as the agent's failure (`grader-error`), never as an
infrastructure error. Every copy of a sandbox's files (docker's archive stream, bwrap's walk
of its root, the unpacking into a verifier) counts its entries against one `CopyBudget`.

A copy passes through spools on the host (`HoleSpool`): temporary files in which whole
blocks of zeros are skipped, not written, so a sparse file (or any run of zeros) the agent
made costs the host no disk while it travels, and nothing is ever held in memory whole.
"""

from __future__ import annotations

import io
import os
import tempfile
import time
from dataclasses import dataclass

from termgym.errors import ArchiveTooLarge

ENTRY_BYTES = 512
"""What each entry costs of the byte budget besides its content (a tar header)."""


@dataclass(frozen=True)
class CopyLimits:
    """What one copy of an agent's files may carry (a task's `limits`, docs/task-format.md).

    Attributes:
        bytes: Content plus ENTRY_BYTES per entry (a sparse file counts its full size: the
            verifier it lands in holds it whole on docker).
        files: Files, folders and links.
        depth: Components of the deepest path (`/app/a/b` is 3).
        seconds: Wall time of the whole copy.
    """

    bytes: int = 1 << 30
    files: int = 100_000
    depth: int = 128
    seconds: float = 120.0

    def budget(self) -> CopyBudget:
        """A fresh count against these limits, its clock started now."""
        return CopyBudget(self)


HOST_COPY = CopyLimits(bytes=1 << 40, files=1 << 31, depth=512, seconds=3600.0)
"""A copy termgym makes for its caller (`copy_out`), not one of the agent's work."""


class CopyBudget:
    """One copy's count of bytes and entries, and its deadline; `spend` raises past them."""

    def __init__(self, limits: CopyLimits) -> None:
        self.limits = limits
        self.used = 0
        self.files = 0
        self.deadline = time.monotonic() + limits.seconds

    def spend(self, name: str, size: int) -> None:
        """Count the entry `name` (a path, absolute or not) with `size` bytes of content.

        Raises:
            ArchiveTooLarge: the copy passed one of its limits (the message says which).
        """
        self.files += 1
        self.used += size + ENTRY_BYTES
        limits = self.limits
        if self.files > limits.files:
            raise self.too_many_files()
        if self.used > limits.bytes:
            raise ArchiveTooLarge(
                f"The agent's files to copy passed the limit of {limits.bytes >> 20} MiB "
                "(limits.disk_mb)."
            )
        if depth(name) > limits.depth:
            raise ArchiveTooLarge(
                f"The agent's files to copy hold a path deeper than {limits.depth} folders "
                f"(limits.work_depth): {name[:120]!r}..."
            )
        self.check_time()

    def too_many_files(self) -> ArchiveTooLarge:
        """The error of a copy past its count of files and folders."""
        return ArchiveTooLarge(
            f"The agent's files to copy passed the limit of {self.limits.files} files and "
            "folders (limits.work_files)."
        )

    def check_time(self) -> None:
        """Raise ArchiveTooLarge once the copy has taken longer than its limit."""
        if time.monotonic() > self.deadline:
            raise ArchiveTooLarge(
                f"Copying the agent's files took longer than {self.limits.seconds:g} s "
                "(limits.work_copy_timeout)."
            )

    def left(self) -> float:
        """Seconds left before the deadline (at least 0)."""
        return max(0.0, self.deadline - time.monotonic())


def depth(name: str) -> int:
    """Components of a path (`/app/a/b` and `app/a/b/` are 3)."""
    return sum(1 for part in name.split("/") if part and part != ".")


BLOCK = 64 << 10
"""Aligned runs of zeros this long are left as holes in a spool."""

_ZEROS = bytes(BLOCK)


class HoleSpool(io.FileIO):
    """A temporary file (deleted when closed) in which aligned blocks of zeros are skipped.

    Writes gather in a buffer (tarfile writes 10 KiB at a time) that goes to the file a
    megabyte at a time, leaving every aligned BLOCK of zeros in it as a hole. Reads give
    the zeros back; `tell`, `seek` and the file's size behave as for a plain file.
    """

    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="termgym-spool-")
        os.unlink(path)
        super().__init__(fd, "w+b", closefd=True)
        self._pending = bytearray()
        self._at = 0  # the file offset the pending bytes start at

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        if not self._pending:
            self._at = super().tell()
        self._pending += data
        if len(self._pending) >= _GATHER:
            self._drain(whole_blocks=True)
        return len(memoryview(data).cast("B"))

    def _drain(self, *, whole_blocks: bool = False) -> None:
        """Write the pending bytes (with `whole_blocks`, only up to a block boundary)."""
        pending = self._pending
        if not pending:
            return
        view = memoryview(pending)
        end = len(view)
        if whole_blocks:
            end -= (self._at + end) % BLOCK
        super().seek(self._at)
        start = index = 0
        while index < end:
            stop = min(end, index + BLOCK - (self._at + index) % BLOCK)
            if stop - index == BLOCK and view[index:stop] == _ZEROS:
                self._write_all(view[start:index])
                super().seek(self._at + stop)
                start = stop
            index = stop
        self._write_all(view[start:end])
        if end and start == end and os.fstat(self.fileno()).st_size < self._at + end:
            os.ftruncate(self.fileno(), self._at + end)  # a trailing hole
        rest = bytes(view[end:])
        view.release()
        self._at += end
        self._pending = bytearray(rest)

    def _write_all(self, view: memoryview) -> None:
        while view:
            done = super().write(view)
            view = view[done or 0 :]

    def tell(self) -> int:
        return self._at + len(self._pending) if self._pending else super().tell()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self._drain()
        return super().seek(offset, whence)

    def read(self, size: int | None = -1) -> bytes:
        self._drain()
        return super().read(size)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        self._drain()
        return super().readinto(buffer)

    def readall(self) -> bytes:
        self._drain()
        return super().readall()

    def truncate(self, size: int | None = None) -> int:
        self._drain()
        return super().truncate(size)

    def flush(self) -> None:
        self._drain()
        super().flush()

    def close(self) -> None:
        if not self.closed:
            self._pending = bytearray()
        super().close()

    def allocated(self) -> int:
        """Bytes of disk the spool holds (what its holes saved is not counted)."""
        self._drain()
        return os.fstat(self.fileno()).st_blocks * 512


_GATHER = 16 * BLOCK
