"""Tamper evidence of one episode, read from its frozen sandbox after grading.

Trust: nothing read here decides a verdict or the reward. The changes outside the declared
work come from `termgym.sandbox.list_changes` (a host-side walk that follows none of the
agent's links, or the engine's diff); the protected files are copied out by the sandbox's
own export (symlinks stored, never followed) and compared, on the host, with the files the
episode was laid out with.
"""

from __future__ import annotations

import io
import tarfile

from termgym.errors import SandboxError
from termgym.sandbox import Change, Changes, CopyLimits, Sandbox, list_changes
from termgym.tasks import EpisodePlan, TamperEvidence, evidence, protected_changes

PROTECTED_BYTES = 16 << 20
"""What copying the protected files out may read at most (a bigger tree is evidence too)."""


def baseline(sandbox: Sandbox, plan: EpisodePlan) -> Changes | None:
    """The changes outside the work once the task is laid out (its setup's), or None."""
    if not plan.setup:
        return Changes()
    try:
        return list_changes(sandbox, exclude=_declared(plan))
    except SandboxError:
        return None


def collect(
    sandbox: Sandbox, plan: EpisodePlan, before: Changes | None, harness: tuple[str, ...] = ()
) -> TamperEvidence:
    """What the agent changed outside its work and among the task's protected files;
    `harness`: the folders the agent's harness writes (Harbor's /logs), its own places too."""
    try:
        outside = list_changes(sandbox, exclude=[*_declared(plan), *harness])
    except SandboxError:
        outside = None
    if outside is not None and before is not None and before.entries:
        ours = set(before.entries)
        kept = tuple(c for c in outside.entries if c not in ours)
        outside = Changes(kept, outside.total - (len(outside.entries) - len(kept)), outside.exact)
    return evidence(outside, _protected(sandbox, plan))


def unknown() -> TamperEvidence:
    """Evidence that could not be read (the sandbox was gone)."""
    return evidence(None, [])


def _declared(plan: EpisodePlan) -> list[str]:
    """The agent's own places: its work, and for an imported task the harness's /solution
    (where Harbor's solution writes its helper files before solve.sh runs)."""
    harness = ["/solution"] if plan.task.spec.provenance is not None else []
    return [plan.workdir, *plan.task.spec.grading.state, *harness]


def _protected(sandbox: Sandbox, plan: EpisodePlan) -> list[Change]:
    patterns = plan.task.spec.protected
    if not patterns:
        return []
    workdir = plan.workdir.rstrip("/")
    roots = sorted({_root(p) for p in patterns})
    buffer = io.BytesIO()
    paths = [f"{workdir}/{r}" if r else workdir for r in roots]
    try:
        sandbox.export_paths(paths, buffer, CopyLimits(bytes=PROTECTED_BYTES))
    except SandboxError:  # past the bound, or unreadable: the protected tree is not as shown
        return [Change(paths[0], "changed", "unknown")]
    now: dict[str, bytes] = {}
    buffer.seek(0)
    with tarfile.open(fileobj=buffer, mode="r|*") as tar:
        for member in tar:
            name = "/" + member.name.lstrip("./").lstrip("/")
            if not name.startswith(workdir + "/"):
                continue
            rel = name[len(workdir) + 1 :]
            if member.isfile():
                handle = tar.extractfile(member)
                now[rel] = handle.read() if handle is not None else b""
            elif member.issym() or member.islnk():
                now[rel] = b"\0link:" + member.linkname.encode()
            elif not member.isdir():
                now[rel] = b"\0special"
    return protected_changes(patterns, workdir, dict(plan.files), now)


def _root(pattern: str) -> str:
    """The folder (relative to the workdir) below which a glob can match: its fixed start."""
    parts = []
    for part in pattern.split("/"):
        if any(ch in part for ch in "*?["):
            break
        parts.append(part)
    return "/".join(parts)
