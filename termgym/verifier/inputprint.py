"""Runs inside the verifier: a fingerprint of what each of the agent's programs is given.

Injected beside the runner as the module `termgym_inputprint` (stdlib only, Python 3.7+)
and driven by `termgym_agentexec` when a grading records inputs (`termgym check` asks for
it). For every program the graders start as the agent's user it appends one JSON line to
`.termgym-inputs.jsonl` in the job's result folder (root's, 0700: the agent's programs can
neither read nor write it): the test and rule set it ran under, its argv, working folder
and environment with temporary paths normalized, hashes of the files and folders its
arguments and environment name, a hash of its stdin when given up front (`input=`), and
hashes of the files the test wrote into its shared temporary folders since the agent's
last program ended (the state it set up). `termgym check` compares the lines of the same
test under different rule sets (`termgym.grading._inputs`): they must be equal.

Trust: everything here runs as root in the grader's own process, before the agent's
program starts and after it has ended; the agent's programs cannot reach this process or
the record. What it reads of the agent's files (named paths, shared folders) is opened
without following symlinks, regular files only, non-blocking, and bounded in size, so a
planted FIFO, device or symlink cannot hang it or send it outside.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
from typing import Any

RECORD = ".termgym-inputs.jsonl"
"""The record's name in a job's result folder."""

READ_LIMIT = 64 << 20
"""Bytes hashed of one file (more is noted by its size only)."""

TREE_LIMIT = 5000
"""Entries hashed of one named folder (more is noted by their count only)."""

SYSTEM = ("/usr/", "/bin/", "/sbin/", "/lib", "/etc/", "/proc/", "/sys/", "/dev/", "/run/")
"""Named paths of the clean image, not hashed: they are the same in every run."""

_TEMP_NAME = re.compile(r"/[^/\s'\":=,;]+")


class Normalizer:
    """Rewrites temporary paths to names that do not depend on the run: the shared folders'
    per-test folders become <tmp>/<dirN>, other entries of the temporary folder <tmpN>, N
    counted in order of first appearance."""

    def __init__(self, shared: list[str]) -> None:
        self.shared = sorted(shared, key=len, reverse=True)
        self.temp = tempfile.gettempdir().rstrip("/") or "/tmp"
        self.names: dict[str, str] = {}

    def _name(self, real: str, kind: str) -> str:
        if real not in self.names:
            count = sum(1 for v in self.names.values() if v.startswith("<" + kind))
            self.names[real] = f"<{kind}{count}>"
        return self.names[real]

    def text(self, value: str) -> str:
        for base in self.shared:
            start = value.find(base + "/")
            while start >= 0:
                rest = value[start + len(base) :]
                match = _TEMP_NAME.match(rest)
                if not match:
                    break
                placeholder = "<tmp>/" + self._name(base + match.group(0), "dir")
                value = value[:start] + placeholder + rest[match.end() :]
                start = value.find(base + "/", start + len(placeholder))
        start = value.find(self.temp + "/")
        while start >= 0:
            rest = value[start + len(self.temp) :]
            match = _TEMP_NAME.match(rest)
            if not match:
                break
            placeholder = self._name(self.temp + match.group(0), "tmp")
            value = value[:start] + placeholder + rest[match.end() :]
            start = value.find(self.temp + "/", start + len(placeholder))
        return value


def file_digest(path: str) -> str:
    """sha256 of a regular file at `path` (not followed if a symlink); a marker otherwise."""
    try:
        info = os.lstat(path)
    except OSError:
        return "absent"
    if stat.S_ISLNK(info.st_mode):
        try:
            return "symlink:" + os.readlink(path)
        except OSError:
            return "symlink"
    if stat.S_ISDIR(info.st_mode):
        return "folder"
    if not stat.S_ISREG(info.st_mode):
        return "special"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return "unreadable"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "special"
        digest = hashlib.sha256()
        left = READ_LIMIT
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
        size = os.fstat(fd).st_size
        suffix = "" if size <= READ_LIMIT else f" (first {READ_LIMIT} of {size} bytes)"
        return digest.hexdigest() + suffix
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)


def tree_digest(folder: str) -> str:
    """One sha256 over a folder's entries (relative names, kinds, contents), not following
    symlinks: at most TREE_LIMIT entries and READ_LIMIT bytes of contents (past either, the
    walk stops and the digest says so)."""
    digest = hashlib.sha256()
    count, budget = 0, READ_LIMIT
    for base, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(dirs + files):
            path = os.path.join(base, name)
            count += 1
            if count > TREE_LIMIT:
                return f"{digest.hexdigest()} (first {TREE_LIMIT} entries)"
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_size > budget:
                what = f"{info.st_size} bytes, not read"
            else:
                what = file_digest(path)
                budget -= info.st_size if stat.S_ISREG(info.st_mode) else 0
            rel = os.path.relpath(path, folder)
            digest.update(f"{rel}\0{what}\n".encode("utf-8", "replace"))
    return digest.hexdigest()


def reachable(path: str, uid: int) -> bool:
    """Whether the user `uid` (in its own group only, as the agent's user is) could open
    `path`: search permission on every folder above it, read (and search, for a folder)
    on it. What the agent's programs cannot open is no input of theirs, whatever it holds
    (the clean verifier's /tests is root's, 0700)."""

    def allowed(info: os.stat_result, bits: int) -> bool:
        if info.st_uid == uid:
            shift = 6
        elif info.st_gid == uid:
            shift = 3
        else:
            shift = 0
        return (info.st_mode >> shift) & bits == bits

    parts = path.split("/")
    for depth in range(1, len(parts)):
        folder = "/".join(parts[:depth]) or "/"
        try:
            info = os.stat(folder)
        except OSError:
            return False
        if not allowed(info, 1):
            return False
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(info.st_mode):
        return True  # the link itself is what the program is given; not followed here
    return allowed(info, 5 if stat.S_ISDIR(info.st_mode) else 4)


def _signature(info: os.stat_result) -> tuple[int, int, int]:
    return (info.st_mtime_ns, info.st_size, info.st_ino)


class Recorder:
    """Appends one line per started program to `path` (see the module docstring)."""

    def __init__(self, path: str, agent_uid: int) -> None:
        self.path = path
        self.agent_uid = agent_uid
        self.test = ""
        self.ruleset = ""
        self.shared_scope = False
        self.seen: dict[str, tuple[int, int, int]] = {}
        self.pending: list[dict[str, Any]] = []
        self.count = 0

    def context(self, test: str, ruleset: str, folders: list[str]) -> None:
        """A new test (or rule set) begins: what the shared folders hold now is not its input."""
        self.flush()
        self.test, self.ruleset, self.shared_scope = test, ruleset, False
        self._look(folders)

    def _walk(self, folders: list[str]) -> list[tuple[str, os.stat_result]]:
        found = []
        for folder in folders:
            for base, dirs, files in os.walk(folder):
                dirs.sort()
                for name in sorted(files):
                    path = os.path.join(base, name)
                    with contextlib.suppress(OSError):
                        found.append((path, os.lstat(path)))
        return found

    def _look(self, folders: list[str]) -> None:
        self.seen = {path: _signature(info) for path, info in self._walk(folders)}

    def before_start(
        self, argv: list[str], cwd: str, env: dict[str, str], folders: list[str]
    ) -> dict[str, Any]:
        """The record of a program about to start (before its folders are handed over)."""
        norm = Normalizer(folders)
        where = cwd or os.getcwd()
        self.count += 1
        record: dict[str, Any] = {
            "index": self.count,
            "test": self.test,
            "ruleset": self.ruleset,
            "shared": self.shared_scope,
            "argv": [norm.text(a) for a in argv],
            "cwd": norm.text(where),
            "env": {k: norm.text(v) for k, v in sorted(env.items())},
            "named": {},
            "given": {},
            "stdin": None,
        }
        named = record["named"]
        for index, arg in enumerate(argv):
            self._name(named, f"arg {index}", arg, where, folders)
        for key, value in sorted(env.items()):
            if key not in ("HOME", "PWD", "OLDPWD"):
                self._name(named, "env " + key, value, where, folders)
        given = record["given"]
        for path, info in self._walk(folders):
            signature = _signature(info)
            if self.seen.get(path) != signature:
                given[norm.text(path)] = file_digest(path)
                self.seen[path] = signature
        self.pending.append(record)
        return record

    @staticmethod
    def _inside(path: str, folders: list[str]) -> bool:
        return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)

    def _name(
        self, named: dict[str, str], label: str, value: str, cwd: str, folders: list[str]
    ) -> None:
        if not value or "\0" in value or len(value) > 4096:
            return
        path = value if os.path.isabs(value) else os.path.join(cwd, value)
        path = os.path.normpath(path)
        if not (os.path.isabs(value) or "/" in value) or not os.path.lexists(path):
            return
        if path.startswith(SYSTEM) or self._inside(path, folders):
            return  # what the test wrote there is in "given", what the agent wrote is not input
        try:
            is_dir = stat.S_ISDIR(os.lstat(path).st_mode)
        except OSError:
            return
        if not reachable(path, self.agent_uid):
            named[label] = "closed to the agent's user"
            return
        named[label] = tree_digest(path) if is_dir else file_digest(path)

    @staticmethod
    def stdin(record: dict[str, Any], data: Any) -> None:
        """The program's stdin, given up front (`input=`)."""
        if data is None:
            return
        raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else bytes(data)
        record["stdin"] = hashlib.sha256(raw).hexdigest()

    @staticmethod
    def stdin_file(record: dict[str, Any], stdin: Any) -> None:
        """The program's stdin when it is an open file (`stdin=open(path)`)."""
        name = getattr(stdin, "name", None)
        if isinstance(name, str) and os.path.isabs(name):
            record["stdin"] = "file " + file_digest(name)

    def finished(self, record: dict[str, Any], folders: list[str]) -> None:
        """The program ended: what the shared folders hold now is its output, not input."""
        if record.get("done"):
            return
        record["done"] = True
        self._look(folders)
        self.flush(only_done=True)

    def flush(self, only_done: bool = False) -> None:
        """Write the pending records (only those whose program ended, if `only_done`)."""
        ready = [r for r in self.pending if r.get("done") or not only_done]
        if not ready:
            return
        written = {id(r) for r in ready}
        self.pending = [r for r in self.pending if id(r) not in written]
        lines = "".join(json.dumps(r, sort_keys=True) + "\n" for r in ready)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError:
            return
        with os.fdopen(fd, "a") as handle:
            handle.write(lines)
