"""Tamper evidence: what an agent changed that its task never asked it to change.

Grading never reads the agent's sandbox, so nothing here decides a verdict; it is evidence
for a reviewer (docs/metrics.md, "Tamper evidence"). From the changes outside the declared
work (`termgym.sandbox.list_changes`) and the task's protected workspace files it changed:

- tests: the task's `protected` files (its own tests, the files that state its rules) were
  changed, deleted, or joined by new ones;
- toolchain: programs, interpreters and libraries (/usr, /bin, /lib, /opt, the dynamic
  loader's configuration, Python's site folders, shell start-up files);
- system: anything else outside the work and outside the places programs write as a matter
  of course (SCRATCH: /tmp, caches, logs, the home folders' own files).

A `.pyc` file *added* under a `__pycache__` folder is Python's own cache and not evidence;
a changed or deleted one is.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from termgym.sandbox import Change, Changes

TamperKind = Literal["tests", "toolchain", "system"]
TAMPER_KINDS: tuple[TamperKind, ...] = ("tests", "toolchain", "system")

SCRATCH: tuple[str, ...] = (
    "/tmp", "/var/tmp", "/root", "/home", "/run", "/dev", "/proc", "/sys", "/mnt", "/media",
    "/var/cache", "/var/log", "/var/spool", "/var/mail", "/var/lib/apt", "/var/lib/dpkg",
)  # fmt: skip
"""Where programs write as a matter of course; below them only TOOLCHAIN_IN_SCRATCH counts."""

TOOLCHAIN: tuple[str, ...] = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
    "/etc/ld.so.preload", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.cache",
    "/etc/alternatives", "/etc/python3", "/etc/profile", "/etc/profile.d",
    "/etc/bash.bashrc", "/etc/environment",
)  # fmt: skip
"""Programs, interpreters, libraries and what decides which of them run."""

TOOLCHAIN_IN_SCRATCH = re.compile(
    r"^/(?:root|home/[^/]+)/(?:\.local/(?:lib/python[^/]*|bin)(?:/|$)|"
    r"\.(?:bashrc|bash_profile|profile|pythonrc|pydistutils\.cfg)$|\.config/pip(?:/|$))"
)
"""Files of a home folder that change which programs or modules run (user site-packages,
~/.local/bin, shell start-up files, pip's configuration)."""


def _below(path: str, prefixes: Iterable[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


def _cache(change: Change) -> bool:
    parent, _, name = change.path.rpartition("/")
    return change.kind == "added" and parent.endswith("/__pycache__") and name.endswith(".pyc")


def category(change: Change) -> TamperKind | None:
    """Which kind of evidence a change outside the work is (None: not evidence)."""
    if _cache(change):
        return None
    if TOOLCHAIN_IN_SCRATCH.match(change.path):
        return "toolchain"
    if _below(change.path, SCRATCH):
        return None
    if _below(change.path, TOOLCHAIN):
        return "toolchain"
    return "system"


def protected_files(patterns: Sequence[str], files: Iterable[str]) -> list[str]:
    """The workspace files (paths relative to the workdir) that `patterns` protect."""
    return sorted(f for f in files if any(fnmatch.fnmatch(f, p) for p in patterns))


def protected_changes(
    patterns: Sequence[str], workdir: str, shown: Mapping[str, bytes], now: Mapping[str, bytes]
) -> list[Change]:
    """The protected files changed between the workspace as shown (`shown`: path relative to
    the workdir -> content) and as left (`now`, the same for every protected path found)."""
    out = []
    for rel in protected_files(patterns, set(shown) | set(now)):
        path = f"{workdir.rstrip('/')}/{rel}"
        if rel not in now:
            out.append(Change(path, "deleted", "file"))
        elif rel not in shown:
            out.append(Change(path, "added", "file"))
        elif now[rel] != shown[rel]:
            out.append(Change(path, "changed", "file"))
    return out


@dataclass(frozen=True)
class TamperEvidence:
    """What an episode's agent changed that it had no business changing.

    Attributes:
        tests: The task's protected files it changed (paths in the sandbox).
        toolchain: Changes to programs, interpreters, libraries.
        system: Other changes outside the work and the scratch places.
        outside: How many changes outside the work there were in all (evidence or not).
        known: The backend could list the changes outside the work (False: only the
            protected files were compared).
        exact: Every change was read (False: the listing stopped at its bound).
    """

    tests: tuple[Change, ...] = ()
    toolchain: tuple[Change, ...] = ()
    system: tuple[Change, ...] = ()
    outside: int = 0
    known: bool = True
    exact: bool = True

    @property
    def tampered(self) -> bool:
        """Any evidence at all."""
        return bool(self.tests or self.toolchain or self.system)

    @property
    def kinds(self) -> tuple[TamperKind, ...]:
        """The kinds of evidence found, in TAMPER_KINDS order."""
        return tuple(k for k in TAMPER_KINDS if getattr(self, k))

    def of(self, kind: TamperKind) -> tuple[Change, ...]:
        return tuple(getattr(self, kind))

    def summary(self) -> str:
        """E.g. "tests: /app/SPEC.md changed; toolchain: 1 change (/usr/lib/...)"."""
        parts = []
        for kind in self.kinds:
            changes = self.of(kind)
            first = ", ".join(f"{c.path} {c.kind}" for c in changes[:2])
            more = f" and {len(changes) - 2} more" if len(changes) > 2 else ""
            parts.append(f"{kind}: {first}{more}")
        if not self.known:
            parts.append("changes outside the work unknown (backend)")
        return "; ".join(parts) or "none"

    def to_dict(self) -> dict[str, Any]:
        return {
            **{kind: [c.to_dict() for c in self.of(kind)] for kind in TAMPER_KINDS},
            "outside": self.outside,
            "known": self.known,
            "exact": self.exact,
        }

    @classmethod
    def from_dict(cls, data: Any) -> TamperEvidence | None:
        """The form `to_dict` writes (a recording's end line), or None when there is none
        (None, or an empty mapping: an env's final info when none was read)."""
        if not isinstance(data, Mapping) or not data:
            return None

        def changes(kind: str) -> tuple[Change, ...]:
            items = data.get(kind)
            found = (Change.from_dict(i) for i in (items if isinstance(items, list) else []))
            return tuple(c for c in found if c is not None)

        outside = data.get("outside")
        return cls(
            tests=changes("tests"),
            toolchain=changes("toolchain"),
            system=changes("system"),
            outside=outside if isinstance(outside, int) else 0,
            known=bool(data.get("known", True)),
            exact=bool(data.get("exact", True)),
        )


def evidence(outside: Changes | None, tests: Sequence[Change], limit: int = 50) -> TamperEvidence:
    """The evidence of an episode: `outside` (the changes outside its work, None: unknown)
    sorted into kinds, beside the protected files it changed; at most `limit` per kind."""
    found: dict[str, list[Change]] = {"toolchain": [], "system": []}
    for change in outside.entries if outside is not None else ():
        kind = category(change)
        if kind is not None and kind != "tests":
            found[kind].append(change)
    return TamperEvidence(
        tests=tuple(tests[:limit]),
        toolchain=tuple(found["toolchain"][:limit]),
        system=tuple(found["system"][:limit]),
        outside=outside.total if outside is not None else 0,
        known=outside is not None,
        exact=outside.exact if outside is not None else True,
    )
