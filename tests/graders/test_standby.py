"""The standby runner: a verifier started ahead of its grading holds the runner, already
started and waiting, and hands it the grading on its stdin (docs/security.md).

Graded on both backends with a real runner in a real verifier.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

import termgym
import termgym.grading._runner as runner_module
from termgym.errors import SandboxStartError
from termgym.grading import grade, prepare, verifier_standby
from termgym.grading._standby import standby_spec
from termgym.grading._verifier import ColdStarts, verifier_config
from termgym.sandbox import Sandbox, SandboxConfig, as_verifier, make_sandbox
from termgym.sandbox._common import HostProcess
from termgym.sandbox._zygote import ZygoteStandby
from termgym.tasks import instantiate, load_task
from tests.env.conftest import oracle_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
KEY = "5e" * 32


class Watched(ColdStarts):
    """Cold verifiers (started with their standby), watched: what each import found, how
    its standby ended; `before_use` may harm the standby first."""

    def __init__(self, backend: str, before_use: Any = None) -> None:
        super().__init__(backend)
        self.before_use = before_use
        self.standbys: list[Any] = []
        self.alive_at_import: list[bool] = []
        self.configs: list[SandboxConfig] = []

    def acquire(self, config: SandboxConfig) -> Sandbox:
        self.configs.append(config)
        verifier = super().acquire(config)
        standby = getattr(verifier, "_standby", None)
        if standby is not None:
            self.standbys.append(standby)
            if self.before_use is not None:
                self.before_use(standby)
        original = verifier.import_archive

        def import_archive(archive: Any, budget: Any = None) -> None:
            self.alive_at_import.append(standby is not None and standby.alive())
            original(archive, budget)

        verifier.import_archive = import_archive  # type: ignore[method-assign]
        return verifier


@pytest.fixture
def episode(backend: str) -> Any:
    task = load_task(FIXTURES / "standby-probe")
    box = make_sandbox(backend, SandboxConfig(workdir="/app", memory_mb=256))
    box.start()
    plan = instantiate(task, "original", seed=0)
    prepare(box, plan)
    box.run("echo 10 > /app/out.txt")
    yield box, plan
    box.close()


def _probe(report: Any) -> dict[str, Any]:
    verdict = report.verdicts["original"]
    assert verdict.passed, verdict
    (probe,) = [r for r in verdict.results if r.grader == "probe"]
    return json.loads(probe.message)


def test_a_bwrap_grading_goes_to_the_standby_that_waited_before_the_work_arrived(
    episode: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    box, plan = episode
    monkeypatch.setattr(runner_module, "new_key", lambda: KEY)
    source = Watched(box.backend)
    report = grade(box, plan, shadow=False, verifiers=source)
    # prepared for the task (its grading folder, its support modules), forked from a zygote
    # where the backend can (bwrap as root)
    assert source.configs[0].standby == verifier_standby(plan.task, zygote=True)
    assert source.alive_at_import == [True]  # started and waiting before any file came in
    (standby,) = source.standbys
    assert not standby.alive()  # it graded, then ended
    seen = _probe(report)
    # the key reached the runner on its stdin only: not its command line, not its environment
    assert KEY not in seen["cmdline"] and KEY not in seen["environ"]
    assert "TERMGYM_REPORT_KEY" not in seen["env_now"]
    assert "termgym_standby" in seen["cmdline"] and "manifest" not in seen["cmdline"]
    # the agent's user reads nothing of the runner, its command line included (the
    # verifier's /proc lists the runner to none of the agent's programs), nor signals it
    agent = seen["agent"]
    assert all(agent[name]["exit"] != 0 for name in ("environ", "fd/0", "mem")), agent
    assert agent["cmdline"]["exit"] != 0 or agent["cmdline"]["bytes"] == 0, agent
    assert seen["agent_ptrace"] != 0


def test_a_standby_that_died_before_its_grading_is_never_used_and_the_grading_runs_cold(
    episode: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    box, plan = episode
    monkeypatch.setattr(runner_module, "new_key", lambda: KEY)

    def kill(standby: Any) -> None:  # from outside, as an out-of-memory kill would
        if isinstance(standby, HostProcess):
            os.killpg(standby.proc.pid, signal.SIGKILL)
            standby.proc.wait(timeout=60)
            return
        if isinstance(standby, ZygoteStandby):  # the process the host placed in its cgroups
            signal.pidfd_send_signal(standby.pidfd, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while standby.alive() and time.monotonic() < deadline:
                time.sleep(0.02)
            return
        api = standby.sandbox.container.client.api
        pid = int(api.exec_inspect(standby.exec_id)["Pid"])
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while standby.alive() and time.monotonic() < deadline:
            time.sleep(0.02)

    source = Watched(box.backend, before_use=kill)
    report = grade(box, plan, shadow=False, verifiers=source)
    seen = _probe(report)  # passed, by an authentic report of a cold exec
    assert "termgym_run.py manifest.json" in seen["cmdline"]
    # a cold exec's key stays in its process's environment block (dropped from os.environ
    # only): the probe sees it there, so it would see a standby's too
    assert KEY in seen["environ"] and "TERMGYM_REPORT_KEY" not in seen["env_now"]
    assert seen["agent"]["environ"]["exit"] != 0  # the agent's user never could


def test_a_standby_keeps_waiting_in_a_pool_until_its_grading(backend: str) -> None:
    from termgym.env._pool import SandboxPool

    pool = SandboxPool(lambda c: make_sandbox(backend, c), size=1)
    config = verifier_config(SandboxConfig(memory_mb=256), standby=standby_spec("/usr/bin/python3"))
    try:
        pool.prefill(config)
        deadline = time.monotonic() + 120
        while pool.ready(config) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        verifier = as_verifier(pool.acquire(config))
        assert verifier.capabilities.standby
        time.sleep(0.5)  # time passes (more on a busy machine), and it still waits on its stdin
        standby = verifier.take_standby()
        assert standby is not None and standby.alive()
        assert verifier.take_standby() is None  # handed over once
        result = standby.finish(b"not a go line\n", timeout=60)
        assert result.exit_code == 2 and "expected a go line" in result.output
        pool.release(verifier)
    finally:
        pool.close()


def test_only_a_verifier_keeps_a_standby(backend: str) -> None:
    agent = make_sandbox(backend, SandboxConfig(standby=standby_spec("/usr/bin/python3")))
    assert agent.capabilities.standby
    with pytest.raises(SandboxStartError, match="verifier"):
        agent.start()


def test_a_standby_that_never_says_it_waits_is_not_kept(backend: str) -> None:
    broken = standby_spec("/usr/bin/no-such-python")
    verifier = as_verifier(make_sandbox(backend, verifier_config(SandboxConfig(), standby=broken)))
    assert verifier.capabilities.standby
    verifier.start()
    try:
        assert verifier.take_standby() is None  # the grading would run by a cold exec
    finally:
        verifier.close()


@pytest.mark.bwrap
def test_closing_a_verifier_stops_its_unused_standby(base_rootfs: str) -> None:
    config = verifier_config(SandboxConfig(memory_mb=256), standby=standby_spec("/usr/bin/python3"))
    verifier = make_sandbox("bwrap", config)
    verifier.start()
    standby = verifier._standby  # type: ignore[attr-defined]
    assert standby is not None and standby.alive()
    verifier.close()
    assert standby.proc.returncode is not None  # killed and reaped, no zombie left


def test_an_episodes_grading_takes_the_verifiers_reserved_for_it_at_reset(backend: str) -> None:
    env = termgym.make("fuel-planner", variant="contradicted", backend=backend, pool_size=1)
    try:
        env.reset(seed=0)
        episode = env.unwrapped._episode
        reserved, pool = episode.verifiers, episode.pool
        assert reserved is not None and reserved.left == 2  # one per rule set (and a shadow)
        deadline = time.monotonic() + 120
        while pool.ready(reserved.config) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)  # started at reset, while the agent works: warm by its submit
        assert pool.ready(reserved.config) == 2
        before = pool.stats
        env.step(oracle_command("fuel-planner"))
        _, reward, terminated, _, info = env.step(termgym.SUBMIT)
        assert terminated and reward == 1.0 and info["class"] == "adapted"
        after = pool.stats
        assert (after.warm - before.warm, after.cold - before.cold) == (2, 0)
        assert reserved.left == 0 and pool.starting(reserved.config) == 0  # none replaced
    finally:
        env.close()
