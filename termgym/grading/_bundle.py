"""What goes into a verifier: the agent's work (re-owned) and the grading folder, as one tar.

The grading folder holds the task's graders/, the grader kinds' support files, the
manifest (jobs and rule sets), the runner, `termgym_jobs`, `termgym_agentexec`,
`termgym_agentcode`, `termgym_inputprint`, `termgym_nest`, `termgym_kernel`,
`termgym_prepare`, `termgym_snapshot`, `termgym_watch` (all from
`termgym.verifier`), the seccomp program the nests apply to the agent's programs and the
one snapshot grading's tests apply to themselves (the kernel's watch). It lands in a
folder under GRADE_ROOT, which every user may pass through but not list: mode 0700,
root's; its name is random, or, for a
verifier whose standby unpacked the same folder before the work arrived
(`termgym.grading._standby`), the digest of its files.
The agent's work keeps its paths; every entry of it becomes the agent's user's
(AGENT_UID), loses setuid, setgid and sticky bits, and devices are left out, as is anything
below a symlink of the work itself, or below a hard link to one (it would land where the
agent's symlink points).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import secrets
import tarfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from termgym.grading._launcher import LAUNCHER, nest_launcher
from termgym.grading._plan import Manifest
from termgym.sandbox import AGENT_UID, strict_filter, watch_filter
from termgym.verifier import INJECTED

SUPPORT = (
    "termgym_run.py", "termgym_jobs.py", "termgym_agentexec.py", "termgym_agentcode.py",
    "termgym_inputprint.py", "termgym_nest.py", "termgym_kernel.py", "termgym_snapshot.py",
    "termgym_watch.py", "termgym_prepare.py",
)  # fmt: skip
"""The files of termgym.verifier every grading folder holds (a grader kind adds its own)."""

GRADE_ROOT = "var/lib/termgym-verifier"
"""Where grading folders go in a verifier (relative to its root; mode 0711)."""

CHANGED = "termgym_changed.txt"
"""Snapshot grading: what the agent made or changed, one sandbox path a line, after header
lines that are no path (termgym.verifier.snapshot's `changed_files` reads them):
`since SECONDS` (the host's clock when the listing was begun: what changed since is the
agent's too) and `everything` (the listing is not the whole of it: every file counts)."""
LISTED_SINCE = "since "
LISTED_ALL = "everything"
AGENT_CODE = ".termgym-agent-code"
"""In a run's result files: what of the agent's its tests loaded (termgym_snapshot)."""
FILTER = "termgym_seccomp.bpf"
"""The strict seccomp program every nest applies to the agent's programs (classic BPF)."""
WATCH_FILTER = "termgym_watch.bpf"
"""Snapshot grading's watch program (termgym_watch.FILTER): the tests' process applies it."""
WATCHED = ".termgym-kernel-watch"
"""In a snapshot run's result files: what the kernel saw its tests run, map and load
(termgym_watch.FINDINGS), one finding a line."""


@dataclass(frozen=True)
class GradingFolder:
    """Where the grading folder will be in the verifier, and the runner's command."""

    path: str

    def argv(self, python: str) -> list[str]:
        """The runner's command line: relative paths only, run from the folder itself."""
        return [python, "-I", "-B", "termgym_run.py", "manifest.json"]


GRADED = "graded"
"""The one rule set's name inside every verifier: the same under every rule set, so nothing
a program could find there (a test id, a folder, a report) tells which one it is."""


def new_folder() -> GradingFolder:
    """A fresh random grading folder path."""
    return GradingFolder("/" + GRADE_ROOT + "/" + secrets.token_hex(16))


FolderFiles = dict[str, tuple[bytes | None, int]]
"""A grading folder but its manifest: relative path -> (content, or None for a folder; mode)."""


def folder_files(task_graders: Path | None, files: Mapping[str, bytes]) -> FolderFiles:
    """The grading folder's files: the task's graders/, the kinds' `files`, the runner and
    its support modules; root's, 0700 for folders and programs, 0600 for the rest."""
    out: FolderFiles = {}
    if task_graders is not None and task_graders.is_dir():
        out["graders"] = (None, 0o700)
        for path in sorted(task_graders.rglob("*")):
            rel = "graders/" + path.relative_to(task_graders).as_posix()
            if path.is_dir():
                out[rel] = (None, 0o700)
            else:
                out[rel] = (path.read_bytes(), 0o700 if path.stat().st_mode & 0o100 else 0o600)
    for rel, content in files.items():
        parts = rel.split("/")
        for end in range(1, len(parts)):
            out.setdefault("/".join(parts[:end]), (None, 0o700))
        out[rel] = (content, 0o600)
    out.update(_support())
    return out


@functools.cache
def _support() -> FolderFiles:
    """The runner, its support modules and the nests' seccomp program (read once)."""
    out: FolderFiles = {name: (INJECTED[name].read_bytes(), 0o600) for name in SUPPORT}
    out[FILTER] = (strict_filter(), 0o600)
    out[WATCH_FILTER] = (watch_filter(), 0o600)
    launcher = nest_launcher()
    if launcher is not None:
        out[LAUNCHER] = (launcher, 0o700)
    return out


def digest_folder(files: FolderFiles) -> GradingFolder:
    """The grading folder named by the digest of its files: the same task graders and
    support files, the same folder, in every verifier (and the standby that unpacked it)."""
    digest = hashlib.sha256()
    for rel, (content, mode) in sorted(files.items()):
        size = -1 if content is None else len(content)
        digest.update(b"%s\0%o\0%d\0" % (rel.encode(), mode, size))
        digest.update(content or b"")
    return GradingFolder("/" + GRADE_ROOT + "/" + digest.hexdigest()[:32])


def write_bundle(
    out: BinaryIO,
    folder: GradingFolder,
    *,
    work: BinaryIO | None,
    task_graders: Path | None,
    files: Mapping[str, bytes],
    manifest: Manifest,
    held: FolderFiles | None = None,
) -> None:
    """Write the verifier's whole input (work first, then the grading folder) to `out`.

    `held`: the folder's files a standby waiting in the verifier has unpacked there before
    the work existed (`Preparation.files`); those it holds as they are here are left out."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        if work is not None:
            links: set[str] = set()
            kept: set[str] = set()
            with tarfile.open(fileobj=work, mode="r|") as source:
                for member in source:
                    if member.ischr() or member.isblk() or _under_a_link(member.name, links):
                        continue
                    if member.islnk() and member.linkname.strip("/") not in kept:
                        continue  # a second name of what was left out: it would name
                        # whatever the verifier holds at that path
                    if member.issym() or member.islnk() and _is_link(member.linkname, links):
                        links.add(member.name.strip("/"))
                    kept.add(member.name.strip("/"))
                    data = source.extractfile(member) if member.isfile() else None
                    member.uid = member.gid = AGENT_UID
                    member.uname = member.gname = ""
                    member.mode &= 0o777
                    tar.addfile(member, data)
        # what the standby holds was read from the task's graders/ when it was prepared (a
        # change there makes a new preparation): only the kinds' files may differ from it
        contents = folder_files(None if held else task_graders, files)
        contents["manifest.json"] = (json.dumps(manifest).encode(), 0o600)
        if held:
            contents = {rel: entry for rel, entry in contents.items() if held.get(rel) != entry}
        _add_folder(tar, folder, contents)


def write_folder(out: BinaryIO, folder: GradingFolder, contents: FolderFiles) -> None:
    """Write the grading folder's files `contents` alone to `out` (for a verifier whose
    standby did not unpack them: `write_bundle`'s `held`)."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_folder(tar, folder, contents)


def _add_folder(tar: tarfile.TarFile, folder: GradingFolder, contents: FolderFiles) -> None:
    """The grading folder's own entries, then `contents` below it, root's."""
    _dir(tar, GRADE_ROOT, 0o711)
    base = folder.path.lstrip("/")
    _dir(tar, base, 0o700)
    now = int(time.time())  # whole seconds: a fraction would cost every member a pax header
    for rel, (content, mode) in sorted(contents.items()):
        member = tarfile.TarInfo(f"{base}/{rel}")
        member.uid = member.gid = 0
        member.uname = member.gname = "root"
        member.mode, member.mtime = mode, now
        if content is None:
            member.type = tarfile.DIRTYPE
            tar.addfile(member)
        else:
            member.size = len(content)
            tar.addfile(member, io.BytesIO(content))


def _under_a_link(name: str, links: set[str]) -> bool:
    """`name` lies below a symlink the work itself holds (overlapping declared paths, one
    reached through the agent's symlink in the other): unpacked, it would be written
    wherever that symlink points in the verifier, so it is left out."""
    parts = name.strip("/").split("/")
    return any("/".join(parts[:end]) in links for end in range(1, len(parts)))


def _is_link(name: str, links: set[str]) -> bool:
    """A hard link's target `name` is one of the work's symlinks: the hard link is that
    symlink again (docker's archive stores a second name of any non-folder as a hard link,
    a symlink's too)."""
    return name.strip("/") in links


def _dir(tar: tarfile.TarFile, name: str, mode: int) -> None:
    member = tarfile.TarInfo(name)
    member.type = tarfile.DIRTYPE
    member.mode = mode
    member.uid = member.gid = 0
    tar.addfile(member)
