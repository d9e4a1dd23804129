"""The standby runner: the grading runner started with its verifier, before the work arrives.

Starting the runner's interpreter and its imports costs most of a short grading (about
50 ms of 75 on bwrap), and a pytest grader's own start (pytest's imports, its configuration,
the collection of the tests) several times that. A verifier whose backend declares `standby`
starts the runner when the verifier itself starts (in the pool, ahead of the grading), from
this bootstrap: it reads the runner's source from stdin, compiles it, then its preparation
(`preparation_for`): the task's grading folder but its manifest, which it unpacks at the
place the grading's bundle will use, the support modules it imports from there, and the
jobs it loads as far as they go before any work exists (pytest: its tests collected). It
prints a ready line and waits. After the work and the grading folder are imported, `go()`
gives it the manifest's place and the report key on its stdin; from there it is the runner
of a cold exec. Where the backend can (bwrap as root, a pooled verifier), the standby is
forked from a zygote that prepared once (`StandbySpec.zygote`). Why that is as sound as the
cold exec: docs/security.md, "The standby runner".
"""

from __future__ import annotations

import base64
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

from termgym.grading._bundle import (
    GRADED,
    FolderFiles,
    GradingFolder,
    digest_folder,
    folder_files,
)
from termgym.kinds import GraderSpec, make_grader
from termgym.sandbox import AGENT_UID, StandbySpec
from termgym.tasks import Task
from termgym.verifier import RUNNER

BOOT = (
    "import sys\n"
    "source = sys.stdin.buffer.read(int(sys.stdin.buffer.readline()))\n"
    "exec(compile(source, 'termgym_run.py', 'exec'), {'__name__': 'termgym_standby'})\n"
)
"""The standby's whole command line after the interpreter: no path, no key, no rule."""

ENV = (
    ("HOME", "/root"),
    ("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
    ("TERMGYM_AGENT_UID", str(AGENT_UID)),
)
"""The runner's environment, the same as a cold exec's less the report key."""


READY = b"TERMGYM-STANDBY-READY"
"""What the standby prints once it waits (termgym.verifier.runner.STANDBY_READY)."""

PREPARE_ENV = "TERMGYM_PREPARE"
"""In a job's environment: the grading folder's module that can load it early
(termgym.verifier.prepare.PREPARE_ENV)."""


@dataclass(frozen=True)
class Preparation:
    """What a task's standby runners load before the work exists (module docstring).

    Attributes:
        folder: Where the grading folder is, in the standby's verifier and in the bundle.
        data: The runner's preparation (JSON): the folder's files, the jobs to load early.
        files: The folder's files (but its manifest), which a waiting standby has unpacked
            in its verifier already: a bundle for it leaves them out (`write_bundle`).
    """

    folder: GradingFolder
    data: bytes
    files: FolderFiles = field(default_factory=dict, compare=False, repr=False)


def preparation_for(task: Task) -> Preparation:
    """The preparation of `task`'s graders (its graders and its pool: every grader a rule
    set of it may run), each job prepared with the paths it will run with."""
    specs = [*task.spec.graders, *task.spec.grader_pool]
    return _preparation(
        str(task.root), task.spec.workdir, tuple(task.spec.grading.state),
        tuple(s.model_dump_json() for s in specs), _signature(task.root),
    )  # fmt: skip


def _signature(root: Path) -> tuple[tuple[str, int, int], ...]:
    """What the task's graders folder holds, as stat sees it (a change makes a new folder)."""
    graders = root / "graders"
    if not graders.is_dir():
        return ()
    found = []
    for path in sorted(graders.rglob("*")):
        info = path.stat()
        found.append((str(path), info.st_mtime_ns, info.st_size))
    return tuple(found)


@functools.lru_cache(maxsize=64)
def _preparation(
    root: str, workdir: str, state: tuple[str, ...], specs: tuple[str, ...],
    signature: tuple[tuple[str, int, int], ...],
) -> Preparation:  # fmt: skip
    files: dict[str, bytes] = {}
    jobs = []
    for raw in specs:
        spec = GraderSpec.model_validate_json(raw)
        job = make_grader(spec.kind).job(spec, Path(root))
        files.update(job.files)
        if job.call is None and job.env.get(PREPARE_ENV):
            jobs.append((spec.name, list(job.argv), dict(job.env)))
    contents = folder_files(Path(root) / "graders", files)
    folder = digest_folder(contents)
    prepared = []
    for index, (name, argv, env) in enumerate(jobs):
        places = {
            "graders": folder.path,
            "results": f"{folder.path}/.results-{index}",
            "scratch": f"/tmp/.termgym-io-{index}",
        }
        prepared.append(
            {
                "id": name, "template": [argv, env], "argv": [_fill(a, places) for a in argv],
                "env": {k: _fill(v, places) for k, v in env.items()},
                "results": places["results"], "scratch": places["scratch"],
            }
        )  # fmt: skip
    data = {
        "folder": folder.path, "files": _encoded(contents), "workdir": workdir,
        "work": [workdir, *state], "rulesets": [GRADED], "jobs": prepared,
    }  # fmt: skip
    return Preparation(folder, json.dumps(data, sort_keys=True).encode(), contents)


def _fill(text: str, places: dict[str, str]) -> str:
    for name, value in places.items():
        text = text.replace("{" + name + "}", value)
    return text


def _encoded(contents: FolderFiles) -> dict[str, list[object]]:
    return {
        rel: [None if content is None else base64.b64encode(content).decode("ascii"), mode]
        for rel, (content, mode) in contents.items()
    }


@functools.lru_cache(maxsize=64)
def standby_spec(
    python: str, preparation: Preparation | None = None, *, zygote: bool = False
) -> StandbySpec:
    """The standby of a verifier whose runner is `python` (the task's `grading.python`),
    prepared with `preparation` (none: it only waits), forked from a zygote where the backend
    can (`zygote`); made once per argument, as every grading asks for it (pools key on it)."""
    source = RUNNER.read_bytes()
    data = preparation.data if preparation is not None else b"{}"
    return StandbySpec(
        argv=(python, "-I", "-B", "-c", BOOT),
        env=ENV,
        first=b"%d\n" % len(source) + source + b"%d\n" % len(data) + data,
        workdir="/",
        ready=READY,
        zygote=zygote,
    )


def go(folder: GradingFolder, key: str) -> bytes:
    """The line that starts the grading: the manifest (relative to "/") and the key."""
    manifest = folder.path.lstrip("/") + "/manifest.json"
    return (json.dumps({"manifest": manifest, "key": key}) + "\n").encode("ascii")
