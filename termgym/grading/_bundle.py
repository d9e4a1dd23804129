"""What goes into a verifier: the agent's work (re-owned) and the grading folder, as one tar.

The grading folder holds the task's graders/, the grader kinds' support files, the
manifest (jobs and rule sets), the runner, `termgym_agentexec`, `termgym_inputprint`,
`termgym_nest` and the seccomp program the nests apply to the agent's programs.
It lands in a fresh folder with a random name under GRADE_ROOT, which every user may pass
through but not list: mode 0700, root's. The agent's work keeps its paths; every entry of
it becomes the agent's user's (AGENT_UID), loses setuid, setgid and sticky bits, and
devices are left out, as is anything below a symlink of the work itself (it would land
where the agent's symlink points).
"""

from __future__ import annotations

import json
import secrets
import shutil
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from termgym.grading._plan import Manifest
from termgym.sandbox import AGENT_UID, strict_filter

GRADE_ROOT = "var/lib/termgym-verifier"
"""Where grading folders go in a verifier (relative to its root; mode 0711)."""

_HERE = Path(__file__).parent
RUNNER = _HERE / "_sandbox_runner.py"
AGENTEXEC = _HERE / "_agentexec.py"
INPUTPRINT = _HERE / "_inputprint.py"
NEST = _HERE / "_nest.py"
SNAPSHOT = _HERE / "_snapshot_runtime.py"
CHANGED = "termgym_changed.txt"
"""Snapshot grading: what the agent made or changed, one sandbox path a line."""
AGENT_CODE = ".termgym-agent-code"
"""In a run's result files: what of the agent's its tests loaded (termgym_snapshot)."""
FILTER = "termgym_seccomp.bpf"
"""The strict seccomp program every nest applies to the agent's programs (classic BPF)."""


@dataclass(frozen=True)
class GradingFolder:
    """Where the grading folder will be in the verifier, and the runner's command."""

    path: str

    def argv(self, python: str) -> list[str]:
        """The runner's command line: relative paths only, run from the folder itself."""
        return [python, "-I", "-B", "termgym_run.py", "manifest.json"]


def new_folder() -> GradingFolder:
    """A fresh random grading folder path."""
    return GradingFolder("/" + GRADE_ROOT + "/" + secrets.token_hex(16))


def write_bundle(
    out: BinaryIO,
    folder: GradingFolder,
    *,
    work: BinaryIO | None,
    task_graders: Path | None,
    files: Mapping[str, bytes],
    manifest: Manifest,
) -> None:
    """Write the verifier's whole input (work first, then the grading folder) to `out`."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        if work is not None:
            links: set[str] = set()
            with tarfile.open(fileobj=work, mode="r|") as source:
                for member in source:
                    if member.ischr() or member.isblk() or _under_a_link(member.name, links):
                        continue
                    if member.issym():
                        links.add(member.name.strip("/"))
                    data = source.extractfile(member) if member.isfile() else None
                    member.uid = member.gid = AGENT_UID
                    member.uname = member.gname = ""
                    member.mode &= 0o777
                    tar.addfile(member, data)
        _dir(tar, GRADE_ROOT, 0o711)
        base = folder.path.lstrip("/")
        _dir(tar, base, 0o700)
        with tempfile.TemporaryDirectory(prefix="termgym-grade-") as tmp:
            staging = Path(tmp)
            if task_graders is not None and task_graders.is_dir():
                shutil.copytree(task_graders, staging / "graders")
            for rel, content in files.items():
                target = staging / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
            shutil.copy(RUNNER, staging / "termgym_run.py")
            shutil.copy(AGENTEXEC, staging / "termgym_agentexec.py")
            shutil.copy(INPUTPRINT, staging / "termgym_inputprint.py")
            shutil.copy(NEST, staging / "termgym_nest.py")
            shutil.copy(SNAPSHOT, staging / "termgym_snapshot.py")
            (staging / FILTER).write_bytes(strict_filter())
            (staging / "manifest.json").write_text(json.dumps(manifest))
            for path in sorted(staging.rglob("*")):
                rel = path.relative_to(staging).as_posix()
                tar.add(str(path), arcname=f"{base}/{rel}", recursive=False, filter=_private)


def _under_a_link(name: str, links: set[str]) -> bool:
    """`name` lies below a symlink the work itself holds (overlapping declared paths, one
    reached through the agent's symlink in the other): unpacked, it would be written
    wherever that symlink points in the verifier, so it is left out."""
    parts = name.strip("/").split("/")
    return any("/".join(parts[:end]) in links for end in range(1, len(parts)))


def _dir(tar: tarfile.TarFile, name: str, mode: int) -> None:
    member = tarfile.TarInfo(name)
    member.type = tarfile.DIRTYPE
    member.mode = mode
    member.uid = member.gid = 0
    tar.addfile(member)


def _private(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mode = 0o700 if info.isdir() else (0o700 if info.mode & 0o100 else 0o600)
    return info
