"""Where foreign tasks come from: a folder, or a git repository at a commit named by its
full hash (`git+URL@COMMIT[#subdirectory=DIR]`), cloned once into the cache and checked.

The commit's hash names its whole tree, so a checkout whose HEAD is that commit and whose
work tree is clean holds exactly the files its author published: the hash is the check.
A short or symbolic revision (a branch, a tag) is refused, since it can name other files
tomorrow; so is a cached checkout someone edited.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from termgym.errors import TaskError

_GIT = re.compile(r"^git\+(?P<url>.+?)@(?P<commit>[^@#/]+)(?:#subdirectory=(?P<sub>[^#]+))?$")
_HASH = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


@dataclass(frozen=True)
class GitSource:
    """A git repository at one commit, and the folder of tasks in it."""

    url: str
    commit: str
    subdirectory: str = ""


def parse_source(source: str) -> GitSource | None:
    """The git source `source` names, or None when it names a folder.

    Raises:
        TaskError: a git source whose revision is not a full commit hash.
    """
    match = _GIT.match(source)
    if match is None:
        if source.startswith("git+"):
            raise TaskError(
                f"expected a git source as git+URL@COMMIT[#subdirectory=DIR], found {source!r}"
            )
        return None
    commit = match["commit"].lower()
    if not _HASH.match(commit):
        raise TaskError(
            f"{source}: expected the commit's full hash (40 hex digits) after '@', found "
            f"{match['commit']!r}: a branch, a tag or a short hash can name other files later"
        )
    sub = (match["sub"] or "").strip("/")
    if ".." in sub.split("/"):
        raise TaskError(f"{source}: expected a subdirectory inside the repository, found {sub!r}")
    return GitSource(match["url"], commit, sub)


def _git(args: list[str], cwd: Path, what: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise TaskError(f"{what}: git {' '.join(args[:2])} failed: {done.stderr.strip()[-600:]}")
    return done.stdout.strip()


def _verified(checkout: Path, source: GitSource, what: str) -> bool:
    """Whether `checkout` is the commit, with a clean work tree."""
    if not (checkout / ".git").is_dir():
        return False
    head = _git(["rev-parse", "HEAD"], checkout, what)
    if head != source.commit:
        raise TaskError(f"{what}: expected the checkout at {source.commit}, found {head}")
    changed = _git(["status", "--porcelain", "--untracked-files=all"], checkout, what)
    if changed:
        raise TaskError(
            f"{what}: expected the cached checkout {checkout} as the commit has it, found it "
            f"changed ({changed.splitlines()[0]} ...): remove it and import again"
        )
    return True


def clone(source: GitSource, cache: Path) -> Path:
    """The checkout of `source` in `cache` (cloned now unless already there), checked by hash.

    Raises:
        TaskError: git fails, the commit is not in the repository, or the checkout differs.
    """
    what = f"git source {source.url}@{source.commit}"
    key = hashlib.sha256(f"{source.url}\0{source.commit}".encode()).hexdigest()[:16]
    checkout = cache / "sources" / f"{key}-{source.commit[:12]}"
    if not _verified(checkout, source, what):
        staging = checkout.with_name(checkout.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        _git(["init", "-q"], staging, what)
        _git(["remote", "add", "origin", source.url], staging, what)
        fetched = subprocess.run(
            ["git", "fetch", "-q", "--depth", "1", "origin", source.commit],
            cwd=staging, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if fetched.returncode != 0:  # a server that serves no commit by hash: all of it
            _git(["fetch", "-q", "origin"], staging, what)
        _git(["-c", "advice.detachedHead=false", "checkout", "-q", source.commit], staging, what)
        shutil.rmtree(checkout, ignore_errors=True)
        staging.rename(checkout)
        _verified(checkout, source, what)
    folder = checkout / source.subdirectory if source.subdirectory else checkout
    if not folder.is_dir():
        raise TaskError(f"{what}: expected a folder {source.subdirectory!r}, found none")
    return folder


def resolve_source(source: str | Path) -> Path:
    """The folder of tasks a source names: itself, or a git source's checked checkout.

    Raises:
        TaskError: a malformed git source, or one that cannot be fetched or checked.
    """
    git = parse_source(str(source))
    if git is None:
        return Path(source)
    from termgym.images import cache_dir

    return clone(git, cache_dir())
