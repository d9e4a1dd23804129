"""An episode's files arrive in its sandbox's workdir as the task has them: each file with
its task file's mode, each folder below the workdir 0755, everything root's; the workdir
itself keeps the mode and owner its sandbox gave it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from termgym.errors import SandboxError
from termgym.grading import prepare
from termgym.sandbox import FileTree, Sandbox, SandboxConfig, make_sandbox
from termgym.tasks import instantiate, load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


@pytest.fixture
def sandbox(backend: str) -> Iterator[Sandbox]:
    box = make_sandbox(backend, SandboxConfig(workdir="/app"))
    box.start()
    yield box
    box.close()


def test_files_keep_their_modes_and_the_workdir_its_own(sandbox: Sandbox, tmp_path: Path) -> None:
    root = tmp_path / "all-kinds"
    shutil.copytree(FIXTURES / "all-kinds", root)
    files = root / "files"
    (files / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (files / "run.sh").chmod(0o755)
    (files / "deep" / "er").mkdir(parents=True)
    (files / "deep" / "er" / "kept.txt").write_text("private\n")
    (files / "deep" / "er" / "kept.txt").chmod(0o640)
    task = load_task(root)
    before = sandbox.run("stat -c '%a %U' /app").output
    prepare(sandbox, instantiate(task, "original", seed=0))
    seen = sandbox.run(
        "cd /app && stat -c '%a %U %n' . policy.txt run.sh deep deep/er deep/er/kept.txt"
    ).output.splitlines()
    assert seen == [
        before.strip() + " .",
        "644 root policy.txt",
        "755 root run.sh",
        "755 root deep",
        "755 root deep/er",
        "640 root deep/er/kept.txt",
    ]
    assert sandbox.run("/app/run.sh").output == "ran\n"


def test_a_file_tree_path_out_of_its_folder_is_refused(sandbox: Sandbox) -> None:
    for rel in ("../escaped", "a/../../escaped", ""):
        with pytest.raises(SandboxError, match="below the folder to copy to"):
            sandbox.copy_in(FileTree({rel: (b"x", 0o644)}), "/app/in")
    assert (
        sandbox.run("ls /app/in /escaped 2>&1 | wc -l; ls / | grep -c escaped").output == "2\n0\n"
    )
