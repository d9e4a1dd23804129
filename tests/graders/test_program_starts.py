"""The programs a test starts as the agent's user, through either way into their nest: the
launcher (a static program started by vfork, where the host can compile it) or the Python
entry (a fork of the test's interpreter). Each must keep `subprocess`'s promises: the
program's status, signals, pipes, folder, a missing program's error (the fixture's tests,
run in the verifier); and each must be the one that ran (the proxy's name), the nest's pid 1
and maker too (where there is a launcher, its make mode, whose fork is the init; else a fork
of the nest's Python maker)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import termgym
from termgym.grading import _bundle, _standby
from termgym.grading._launcher import OFF, nest_launcher
from termgym.tasks import load_task
from tests.conftest import _unavailable, built_by_every_compiler

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


@pytest.fixture(params=["launcher", "python"])
def entry(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The nest entry the grading folders carry: the launcher (failing in CI where the host
    cannot build it) or the Python entry alone."""
    if request.param == "python":
        monkeypatch.setenv(OFF, "0")
    elif nest_launcher() is None:
        _unavailable("The nests' launcher", "no C compiler here builds a static program")
    _forget_folders()
    yield request.param
    monkeypatch.undo()
    _forget_folders()


def _forget_folders() -> None:
    """The grading folders' files are read once per process (and the standbys' preparations
    made once per task): made again, they hold the launcher or not."""
    for cached in (_bundle._support, _standby._preparation, _standby.standby_spec):
        cached.cache_clear()


def test_a_tests_programs_keep_subprocess_promises_through_either_entry(
    backend: str, entry: str
) -> None:
    env = termgym.make(
        load_task(FIXTURES / "program-starts"), backend=backend, pool_size=0, variant="contradicted"
    )
    try:
        env.reset(seed=0)
        env.step("true")
        _, _, _, _, info = env.step(termgym.SUBMIT)
    finally:
        env.close()
    assert info["error"] is None, info["error"]
    for name in ("contradicted", "original"):
        results = {r["grader"]: r for r in info["verdicts"][name]["results"]}
        assert results["starts"]["passed"], results["starts"]["message"]
        proxy = results["proxy"]["message"]
        assert ("proxy=python3" in proxy) == (entry == "python"), proxy
        name, _, mode = proxy.split("init=")[-1].partition(":")
        if entry == "python":
            assert (name, mode) == ("python3", "-I"), proxy
        else:
            assert name.isdigit() and mode == "make", proxy


def test_the_launcher_builds_with_every_compiler_the_host_has(tmp_path: Path) -> None:
    """The launcher's source needs a C library's headers only (no kernel headers), so musl's
    compiler, which makes it a tenth of glibc's size, builds it as cc does."""
    import subprocess

    from termgym.verifier import NEST_LAUNCH

    sizes = {}
    for name, program in built_by_every_compiler(NEST_LAUNCH, tmp_path).items():
        usage = subprocess.run([str(program)], capture_output=True, timeout=10)
        assert usage.returncode == 126 and b"expected USER MNT PID" in usage.stderr
        sizes[name] = program.stat().st_size
    if "musl-gcc" in sizes and "cc" in sizes:
        assert sizes["musl-gcc"] < sizes["cc"] / 4, sizes
