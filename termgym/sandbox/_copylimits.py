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

    Reads give the zeros back (the file's holes); the file's size is always what was
    written, so `tell`, `seek` and `fstat` behave as for a plain file.
    """

    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="termgym-spool-")
        os.unlink(path)
        super().__init__(fd, "w+b", closefd=True)

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        total = len(view)
        pos = self.tell()
        start = 0  # of the run not yet written
        index = 0
        while index < total:
            end = min(total, index + BLOCK - (pos + index) % BLOCK)
            if end - index == BLOCK and view[index:end] == _ZEROS:
                if start < index:
                    self._write_all(view[start:index])
                self.seek(pos + end)
                start = end
            index = end
        if start < total:
            self._write_all(view[start:total])
        elif total and os.fstat(self.fileno()).st_size < pos + total:
            os.ftruncate(self.fileno(), pos + total)  # the trailing hole
        return total

    def _write_all(self, view: memoryview) -> None:
        while view:
            done = super().write(view)
            if done is None:  # pragma: no cover - a blocking file never returns None
                continue
            view = view[done:]

    def allocated(self) -> int:
        """Bytes of disk the spool holds (what its holes saved is not counted)."""
        return os.fstat(self.fileno()).st_blocks * 512
