"""The file, json and regex checks (`termgym_checks`) against what an agent can write to
pass them without doing the task: numbers that are no JSON numbers, a boolean where a number
is expected (and the other way round), and text past what a check reads.

Run here, as root, against the modules the verifier imports, beside a copy of the launcher,
as a grading folder holds them (the checks read the agent's files as its user)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from termgym.verifier import AGENTEXEC, INJECTED


@pytest.fixture(scope="module")
def checks(launcher_folder: Path) -> Iterator[ModuleType]:
    """termgym_checks, importing the termgym_agentexec of a folder that holds the launcher."""
    shutil.copy(AGENTEXEC, launcher_folder / "termgym_agentexec.py")
    modules = {}
    for name, source in (
        ("termgym_agentexec", launcher_folder / "termgym_agentexec.py"),
        ("termgym_checks", INJECTED["termgym_checks.py"]),
    ):
        spec = importlib.util.spec_from_file_location(name, source)
        assert spec is not None and spec.loader is not None
        modules[name] = importlib.util.module_from_spec(spec)
        sys.modules[name] = modules[name]
        spec.loader.exec_module(modules[name])
    yield modules["termgym_checks"]
    for name in modules:
        sys.modules.pop(name, None)


@pytest.fixture
def work() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="termgym-work-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_number_past_json_passes_no_bound(checks: ModuleType, work: Path, number: str) -> None:
    """Compared with a bound, NaN is neither below nor above it: every bound held for it."""
    (work / "plan.json").write_text('{"fuel": ' + number + "}")
    for bounds in ({"min": 1200}, {"max": 1300}, {"min": 1200, "max": 1300}):
        passed, message = checks.json_check("plan.json", str(work), key="fuel", **bounds)
        assert not passed, (number, bounds, message)


def test_a_boolean_is_not_a_number_nor_a_number_a_boolean(checks: ModuleType, work: Path) -> None:
    (work / "a.json").write_text('{"on": true, "count": 1, "ratio": 1.0}')
    assert not checks.json_check("a.json", str(work), key="on", equals=1)[0]
    assert not checks.json_check("a.json", str(work), key="count", equals=True)[0]
    assert checks.json_check("a.json", str(work), key="on", equals=True)[0]
    assert checks.json_check("a.json", str(work), key="count", equals=1)[0]
    assert checks.json_check("a.json", str(work), key="ratio", equals=1)[0]


def test_text_past_what_a_check_reads_fails_it(checks: ModuleType, work: Path) -> None:
    """A sparse file puts its text past the limit for the cost of a few blocks: read up to
    the limit, it looked free of what the checks must not find."""
    sparse = work / "config.txt"
    with open(sparse, "wb") as handle:
        handle.truncate(checks.READ_LIMIT)
        handle.seek(checks.READ_LIMIT)
        handle.write(b"password=hunter2\n")
    os.chmod(sparse, 0o644)
    checked = [
        checks.file_check("config.txt", str(work), not_contains="password"),
        checks.regex_check("config.txt", str(work), "password", expect="no-match"),
        checks.regex_check("config.txt", str(work), "hunter2", count=0),
    ]
    for passed, message in checked:
        assert not passed and "more than" in message, message
    (work / "small.txt").write_text("no secrets\n")
    assert checks.file_check("small.txt", str(work), not_contains="password")[0]
