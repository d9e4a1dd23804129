"""Grading reads what a backend declares (`Capabilities`), never probes its class: a
backend that declares no verifier is refused before anything is stopped, and one whose
verifiers keep no standby is graded by a cold exec of the runner.

Real local sandboxes, whose classes declare other capabilities than the local backend's.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import termgym.grading._runner as runner_module
from termgym.errors import SandboxError
from termgym.grading import grade, pooled_verifiers, prepare
from termgym.grading._verifier import ColdStarts
from termgym.sandbox import (
    Capabilities,
    Sandbox,
    SandboxConfig,
    make_sandbox,
    register_sandbox,
    unregister_sandbox,
)
from termgym.sandbox._local import LocalSandbox
from termgym.tasks import instantiate, load_task

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "standby-probe"


class AgentOnly(LocalSandbox):
    """A local sandbox whose backend declares an agent's sandbox and nothing more."""

    backend = "agent-only"
    capabilities: ClassVar[Capabilities] = Capabilities()


class NoStandby(LocalSandbox):
    """A local sandbox whose backend grades, with no standby runner."""

    backend = "no-standby"
    capabilities: ClassVar[Capabilities] = Capabilities(verifier=True, live=True)


@pytest.fixture
def backends(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TERMGYM_ALLOW_LOCAL", "1")
    register_sandbox("agent-only", AgentOnly, isolated=False)
    register_sandbox("no-standby", NoStandby, isolated=False)
    try:
        yield
    finally:
        unregister_sandbox("agent-only")
        unregister_sandbox("no-standby")


@pytest.fixture
def task(tmp_path: Path) -> Any:
    """The standby-probe task with its file grader alone (its probe reads agent users that
    the local backend has not)."""
    root = tmp_path / "standby-probe"
    shutil.copytree(FIXTURE, root)
    spec = (root / "task.yaml").read_text()
    (root / "task.yaml").write_text(
        "".join(line for line in spec.splitlines(keepends=True) if "probe:look" not in line)
    )
    return load_task(root)


def _episode(backend: str, task: Any) -> tuple[Sandbox, Any]:
    with pytest.warns(RuntimeWarning, match="isolates nothing"):
        box = make_sandbox(backend, SandboxConfig(workdir="/app", memory_mb=256))
    box.start()
    plan = instantiate(task, "original", seed=0)
    prepare(box, plan)
    box.run("echo 10 > /app/out.txt")
    return box, plan


def test_a_backend_that_declares_no_verifier_is_refused_for_grading_before_anything_stops(
    backends: None, task: Any
) -> None:
    box, plan = _episode("agent-only", task)
    try:
        with pytest.raises(
            SandboxError,
            match=r"agent-only backend cannot grade: grading needs a backend that declares "
            r"Capabilities\(verifier=True\).*declares Capabilities\(verifier=False.*"
            r"The backends that grade: .*local",
        ):
            grade(box, plan, shadow=False)
        assert box.run("echo still here").output == "still here\n"  # not frozen
        with pytest.raises(SandboxError, match="agent-only backend cannot grade"):
            pooled_verifiers(SandboxConfig(), "agent-only", plan)
        with pytest.raises(SandboxError, match="agent-only backend cannot grade"):
            make_sandbox("agent-only", SandboxConfig(role="verifier"))
    finally:
        box.close()


class Watched(ColdStarts):
    """Cold verifiers, watched: the configuration each was asked for."""

    def __init__(self, backend: str) -> None:
        super().__init__(backend)
        self.configs: list[SandboxConfig] = []

    def acquire(self, config: SandboxConfig) -> Sandbox:
        self.configs.append(config)
        return super().acquire(config)


@pytest.mark.filterwarnings("ignore:Sandbox backend 'no-standby' isolates nothing")
def test_a_verifier_backend_that_declares_no_standby_is_graded_by_a_cold_exec(
    backends: None, task: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    box, plan = _episode("no-standby", task)
    cold: list[tuple[str, ...]] = []
    original = NoStandby.exec

    def exec_(self: NoStandby, argv: Any, *args: Any, **kwargs: Any) -> Any:
        cold.append(tuple(argv))
        return original(self, argv, *args, **kwargs)

    def never(self: NoStandby) -> None:
        raise AssertionError("take_standby asked of a backend that declares no standby")

    monkeypatch.setattr(NoStandby, "exec", exec_)
    monkeypatch.setattr(NoStandby, "take_standby", never)
    source = Watched("no-standby")
    try:
        report = grade(box, plan, shadow=False, verifiers=source)
    finally:
        box.close()
    assert report.verdicts["original"].passed, report.verdicts["original"]
    assert [c.standby for c in source.configs] == [None]  # asked for none
    assert any("manifest.json" in " ".join(argv) for argv in cold), cold  # the runner, cold
    config = pooled_verifiers(SandboxConfig(), "no-standby", plan)
    assert config is not None and config[0].standby is None
    assert runner_module.check_verifier("no-standby") == NoStandby.capabilities
