"""Verifiers forked from a zygote, and standby runners that load a task's tests before the
work arrives (docs/security.md, "The standby runner"): single-use state per grading; a
verifier's only job, so loaded, run in the runner itself, its timeout kept.

Each grading's agent program (`PROBE`, run by the fixture task's pytest grader) looks for
what another grading's programs could have left (files in /tmp, /var/tmp, /dev/shm and the
work, a daemon) and for another grading's processes running beside it, then leaves all of
that behind itself. Real bwrap and docker verifiers, from a real pool.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from termgym.env._pool import SandboxPool
from termgym.grading import prepare
from termgym.grading._runner import _export_work, _spool, grade_rulesets_in
from termgym.sandbox import Sandbox, SandboxConfig, make_sandbox
from termgym.tasks import EpisodePlan, Task, instantiate, load_task

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "zygote-probe"
ALONE = FIXTURE.with_name("inline-job")

PROBE = r"""#!/bin/bash
# The agent's program: what another grading left or runs beside it, then leave it all.
mine="termgym-probe-$$-$RANDOM$RANDOM"
found=""
for f in /tmp/.left-behind /var/tmp/.left-behind /dev/shm/.left-behind /app/.left-behind; do
  [ -e "$f" ] && found="$found file:$f"
done
scan() {  # $1: also look for daemons (before this program started its own)
  for p in /proc/[0-9]*; do
    c=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null) || continue
    case "$c" in
      termgym-probe-daemon*) [ -n "$1" ] && found="$found daemon:${p#/proc/}" ;;
      termgym-probe-*) [ "${c%% *}" != "$mine" ] && found="$found other:${c%% *}" ;;
    esac
  done
}
scan daemons
start=$(date +%s.%N)
(exec -a "$mine" sleep 30) &
for f in /tmp/.left-behind /var/tmp/.left-behind /dev/shm/.left-behind /app/.left-behind; do
  echo left > "$f" 2>/dev/null
done
setsid bash -c 'exec -a termgym-probe-daemon sleep 120' </dev/null >/dev/null 2>&1 &
for _ in $(seq 30); do
  sleep 0.1
  scan
done
end=$(date +%s.%N)
found=$(echo "$found" | tr ' ' '\n' | sort -u | tr '\n' ' ')
if [ -z "${found// /}" ]; then echo "clean $start $end"; else echo "found:$found"; fi
"""


@pytest.fixture
def pool(backend: str) -> Iterator[SandboxPool]:
    made = SandboxPool(lambda c: make_sandbox(backend, c), size=2)
    yield made
    made.close()


def _episode(
    backend: str, task: Task, probe: str = PROBE, extra: str = "true"
) -> tuple[Sandbox, EpisodePlan]:
    box = make_sandbox(backend, SandboxConfig(workdir="/app", memory_mb=256))
    box.start()
    plan = instantiate(task, "contradicted", seed=0)
    prepare(box, plan)
    answer = "sed -n 's/^limit: *//p' /app/policy.txt > /app/out.txt"
    box.run(f"{answer} && cat > /app/probe.sh <<'EOF'\n{probe}EOF")
    box.run(extra)
    box.freeze()
    return box, plan


def _grade(pool: SandboxPool, box: Sandbox, plan: EpisodePlan) -> Any:
    task = plan.task
    config = box.config  # type: ignore[attr-defined]
    with _spool() as work:
        _export_work(box, task, work)
        return grade_rulesets_in(
            pool, config, task, plan.rulesets, work=work, standby=True, zygote=True
        )


def _probe(graded: Any, ruleset: str) -> str:
    (result,) = [r for r in graded.verdicts[ruleset].results if r.grader == "probe"]
    return result.message.split(": ", 1)[-1].removeprefix("Failed: ")


def _runner(graded: Any, ruleset: str) -> dict[str, Any]:
    (result,) = [r for r in graded.verdicts[ruleset].results if r.grader == "runner"]
    return json.loads(result.message)


@pytest.mark.bwrap
def test_pooled_verifiers_fork_from_one_zygote_and_nothing_of_one_grading_reaches_another(
    base_rootfs: str,
) -> None:
    task = load_task(FIXTURE)
    pool = SandboxPool(lambda c: make_sandbox("bwrap", c), size=2)
    box, plan = _episode("bwrap", task)
    try:
        gradings = [_grade(pool, box, plan) for _ in range(3)]
    finally:
        box.close()
        pool.close()
    for graded in gradings:
        # every verifier's runner was forked from the zygote, the tests collected there
        assert [(r.forked, r.prepared) for r in graded.runners] == [(True, ("probe",))] * 2
        # what each grading loaded anew: the task's own module alone (termgym's checks, for
        # the file grader, the zygote had loaded)
        assert [r.imported for r in graded.runners] == [("runner_facts",)] * 2
        assert graded.verdicts["contradicted"].results[0].passed  # the answer, as graded
        seen = {name: _probe(graded, name) for name in ("contradicted", "original")}
        # nothing left by an earlier grading (files, a daemon), nothing of the other rule
        # set's run beside it
        assert all(line.startswith("clean ") for line in seen.values()), seen
        (a_start, a_end), (b_start, b_end) = (
            tuple(float(x) for x in line.split()[1:]) for line in seen.values()
        )
        assert a_start < b_end and b_start < a_end  # the two rule sets' programs overlapped


@pytest.mark.bwrap
def test_the_runner_of_a_forked_verifier_holds_its_channel_alone_as_pid_1_of_its_own(
    base_rootfs: str,
) -> None:
    task = load_task(FIXTURE)
    pool = SandboxPool(lambda c: make_sandbox("bwrap", c), size=2)
    box, plan = _episode("bwrap", task)
    try:
        graded = _grade(pool, box, plan)
    finally:
        box.close()
        pool.close()
    for name in ("contradicted", "original"):
        facts = _runner(graded, name)
        assert facts["nspid"] == ["1"]  # pid 1 of a pid namespace of its own
        targets = list(facts["fds"].values())
        sockets = [t for t in targets if t.startswith("socket:")]
        assert len(sockets) == 1  # its channel: not the zygote's control socket, nor another's
        others = [t for t in targets if not t.startswith("socket:") and t != "/dev/null"]
        assert others == [], facts


def _variant(tmp_path: Path, extra: str, name: str) -> Task:
    """The fixture task with one more pytest grader (`extra`: its test module)."""
    root = tmp_path / "zygote-probe"
    shutil.copytree(FIXTURE, root)
    (root / "graders" / f"test_{name}.py").write_text(extra)
    spec = (root / "task.yaml").read_text()
    line = f"  - {{name: {name}, kind: pytest, path: graders/test_{name}.py}}\n"
    (root / "task.yaml").write_text(spec.replace("graders:\n", "graders:\n" + line, 1))
    return load_task(root)


READS_THE_WORK = """
from pathlib import Path

LIMIT = Path("/app/out.txt").read_text().strip()  # read while the tests are collected


def test_the_limit_read_at_import(rules):
    assert LIMIT == str(rules["limit"])
"""


def test_tests_that_read_the_work_while_they_are_collected_are_collected_with_it(
    pool: SandboxPool, backend: str, tmp_path: Path
) -> None:
    task = _variant(tmp_path, READS_THE_WORK, "early")
    box, plan = _episode(backend, task, probe="echo clean 0 0\n")
    try:
        graded = _grade(pool, box, plan)
    finally:
        box.close()
    for runner in graded.runners:
        assert "probe" in runner.prepared and "early" not in runner.prepared
    for name in ("contradicted", "original"):
        (early,) = [r for r in graded.verdicts[name].results if r.grader == "early"]
        assert early.passed is (name == "contradicted"), early  # it saw the agent's answer


HOLDS_A_FILE = """
HANDLE = open(__file__)  # kept open: every fork of a zygote would share it


def test_nothing(rules):
    assert rules
"""


@pytest.mark.bwrap
def test_a_zygote_whose_loaded_tests_keep_a_file_open_is_refused_and_standbys_start_anew(
    base_rootfs: str, tmp_path: Path
) -> None:
    task = _variant(tmp_path, HOLDS_A_FILE, "holds")
    pool = SandboxPool(lambda c: make_sandbox("bwrap", c), size=2)
    box, plan = _episode("bwrap", task, probe="echo clean 0 0\n")
    try:
        graded = _grade(pool, box, plan)
    finally:
        box.close()
        pool.close()
    # no zygote served (its forks would share the file), each standby prepared on its own
    assert [r.forked for r in graded.runners] == [False, False]
    assert all({"probe", "holds"} <= set(r.prepared) for r in graded.runners)
    for name in ("contradicted", "original"):
        (holds,) = [r for r in graded.verdicts[name].results if r.grader == "holds"]
        assert holds.passed


@pytest.mark.docker
def test_a_docker_verifiers_standby_collects_the_tests_before_the_work_arrives(
    docker_engine: None,
) -> None:
    task = load_task(FIXTURE)
    pool = SandboxPool(lambda c: make_sandbox("docker", c), size=2)
    box, plan = _episode("docker", task)
    try:
        graded = _grade(pool, box, plan)
    finally:
        box.close()
        pool.close()
    assert [(r.forked, r.prepared) for r in graded.runners] == [(False, ("probe",))] * 2
    seen = {name: _probe(graded, name) for name in ("contradicted", "original")}
    assert all(line.startswith("clean ") for line in seen.values()), seen


LOADS_THE_AGENTS_CODE = """
import sys


def test_the_agents_module_says_yes(rules):
    sys.path.insert(0, "/app")
    import agentmod  # the agent's file: it would run as root, beside the verdict

    assert agentmod.verdict() == "pass"
"""


def test_a_pytest_graders_tests_cannot_load_the_agents_code_into_their_process(
    pool: SandboxPool, backend: str, tmp_path: Path
) -> None:
    task = _variant(tmp_path, LOADS_THE_AGENTS_CODE, "loads")
    module = "printf 'def verdict():\\n    return \"pass\"\\n' > /app/agentmod.py"
    box, plan = _episode(backend, task, probe="echo clean 0 0\n", extra=module)
    try:
        graded = _grade(pool, box, plan)
    finally:
        box.close()
    for name in ("contradicted", "original"):
        (loads,) = [r for r in graded.verdicts[name].results if r.grader == "loads"]
        assert loads.passed is False and "a file of the agent's" in loads.message, loads


@pytest.mark.bwrap
def test_a_zygote_that_died_leaves_its_waiting_verifiers_to_cold_execs_and_starts_anew(
    base_rootfs: str,
) -> None:
    import os
    import signal

    from termgym.grading import verifier_standby
    from termgym.grading._verifier import verifier_config
    from termgym.sandbox import _zygote

    task = load_task(FIXTURE)
    pool = SandboxPool(lambda c: make_sandbox("bwrap", c), size=2)
    box, plan = _episode("bwrap", task, probe="echo clean 0 0\n")
    verifier = verifier_config(box.config, standby=verifier_standby(task, zygote=True))  # type: ignore[attr-defined]
    try:
        first = _grade(pool, box, plan)
        assert [r.forked for r in first.runners] == [True, True]
        deadline = time.monotonic() + 120  # every warm verifier forked from this zygote
        while pool.ready(verifier) < pool.depth(verifier) and time.monotonic() < deadline:
            time.sleep(0.05)
        waiting = pool.ready(verifier)
        assert waiting == pool.depth(verifier) >= 2
        (zygote,) = [z for z in _zygote._ZYGOTES.values() if z.alive() and z.in_use]
        os.killpg(zygote.process.sandbox._standby.proc.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        deadline = time.monotonic() + 30
        while zygote.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not zygote.alive()
        forked: list[bool] = []
        for _ in range(waiting // 2 + 2):
            graded = _grade(pool, box, plan)
            # the waiting verifiers' standbys died with it: cold execs grade as well
            assert graded.verdicts["contradicted"].results[0].passed, graded
            forked += sorted(r.forked for r in graded.runners)  # taken side by side
            if forked.count(False) >= waiting and forked[-2:] == [True, True]:
                break
        # the verifiers that waited ran cold, first; every one started since, from a new one
        assert forked == [False] * waiting + [True] * (len(forked) - waiting), forked
        assert forked[-2:] == [True, True]
    finally:
        box.close()
        pool.close()


def _running(name: bytes) -> bool:
    """Whether a process of the machine runs under the name `name` (the host sees them all)."""
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if (entry / "cmdline").read_bytes().startswith(name):
                return True
        except OSError:
            continue
    return False


@pytest.mark.bwrap
def test_a_zygote_that_dies_under_a_grading_makes_it_termgyms_failure_not_the_agents(
    base_rootfs: str,
) -> None:
    import os
    import signal
    import threading

    from termgym.errors import InfrastructureError
    from termgym.sandbox import _zygote

    task = load_task(FIXTURE)
    pool = SandboxPool(lambda c: make_sandbox("bwrap", c), size=0)
    box, plan = _episode("bwrap", task, probe="exec -a termgym-probe-hold sleep 50\n")
    killed: list[bool] = []

    def kill_the_zygote_once_the_tests_run() -> None:
        deadline = time.monotonic() + 120
        while not _running(b"termgym-probe-hold") and time.monotonic() < deadline:
            time.sleep(0.05)
        for zygote in list(_zygote._ZYGOTES.values()):
            if zygote.in_use:
                os.killpg(zygote.process.sandbox._standby.proc.pid, signal.SIGKILL)  # type: ignore[attr-defined]
                killed.append(True)

    killer = threading.Thread(target=kill_the_zygote_once_the_tests_run)
    killer.start()
    try:
        with pytest.raises(InfrastructureError, match="zygote"):
            _grade(pool, box, plan)
    finally:
        killer.join()
        box.close()
        pool.close()
    assert killed == [True]


@pytest.mark.bwrap
def test_a_zygote_outlives_the_pool_thread_that_started_it(base_rootfs: str) -> None:
    # bwrap dies with the thread that spawned it (--die-with-parent follows the thread): a
    # zygote that one env's pool started on its starter thread must not end with that
    # thread, when that env closes, while other envs' verifiers fork from it.
    from termgym.grading import verifier_standby
    from termgym.grading._verifier import verifier_config
    from termgym.sandbox import _zygote

    task = load_task(FIXTURE)
    first = SandboxPool(lambda c: make_sandbox("bwrap", c), size=1, starters=1)
    other = SandboxPool(lambda c: make_sandbox("bwrap", c), size=0)
    box, plan = _episode("bwrap", task, probe="echo clean 0 0\n")
    verifier = verifier_config(box.config, standby=verifier_standby(task, zygote=True))  # type: ignore[attr-defined]
    try:
        first.prefill(verifier)  # its starter thread starts the verifier, and so the zygote
        deadline = time.monotonic() + 120
        while first.ready(verifier) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        (zygote,) = [z for z in _zygote._ZYGOTES.values() if z.alive()]
        threads = [Path(f"/proc/self/task/{t.native_id}") for t in first._threads]
        first.close()  # its threads end; the other pool lives on
        deadline = time.monotonic() + 30  # until the kernel let them go
        while any(t.exists() for t in threads) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not any(t.exists() for t in threads)
        graded = _grade(other, box, plan)
        assert [r.forked for r in graded.runners] == [True, True]
        assert graded.verdicts["contradicted"].results[0].passed
        assert list(_zygote._ZYGOTES.values()) == [zygote] and zygote.alive()
    finally:
        box.close()
        first.close()
        other.close()


def _alone(tmp_path: Path, test: str, timeout: int) -> Task:
    """The one-grader fixture task with `test` as its grader's tests, graded in `timeout` s."""
    root = tmp_path / "inline-job"
    shutil.copytree(ALONE, root)
    (root / "graders" / "test_answer.py").write_text(test)
    spec = (root / "task.yaml").read_text()
    (root / "task.yaml").write_text(spec.replace("timeout: 60", f"timeout: {timeout}"))
    return load_task(root)


def test_a_verifiers_only_job_runs_in_the_runner_itself_and_grades_as_in_a_fork(
    pool: SandboxPool, backend: str
) -> None:
    task = load_task(ALONE)
    box, plan = _episode(backend, task)
    try:
        graded = _grade(pool, box, plan)
    finally:
        box.close()
    # prepared before the work arrived, and run in the runner, not a fork of it
    assert [(r.prepared, r.inline) for r in graded.runners] == [(("answer",), ("answer",))] * 2
    for name, answered in (("contradicted", True), ("original", False)):
        (result,) = graded.verdicts[name].results
        failed = ["test_where_it_ran"] + ([] if answered else ["test_the_answer"])
        assert sorted(result.details["failed"]) == sorted(failed), result
        facts = json.loads(result.message.split("facts ", 1)[1].split(";")[0])
        assert facts["cwd"] == "/app"  # the job's folder, as in a fork
        # the agent's program the tests started did not even find the runner they ran in
        # (the verifier's /proc lists it to none of the agent's programs), and reached
        # nothing of it: its environment, memory, descriptors, signals
        ran, found, took = facts["agent"]
        assert ran == "ran" and found == "0" and took == "0", facts
        if backend == "bwrap":  # the runner is the verifier's pid 1: the tests ran there
            assert facts["nspid"][-1] == "1", facts


OVERRUNS = """
import time


def test_slow(rules):
    time.sleep(300)
"""

HOLDS_ON = """
import time


def test_slow_and_deaf(rules):
    while True:
        try:
            time.sleep(300)
        except KeyboardInterrupt:  # its timeout's interrupt, swallowed
            pass
"""


def test_a_job_run_in_the_runner_that_overruns_ends_at_its_timeout(
    pool: SandboxPool, backend: str, tmp_path: Path
) -> None:
    task = _alone(tmp_path, OVERRUNS, timeout=3)
    box, plan = _episode(backend, task)
    try:
        began = time.monotonic()
        graded = _grade(pool, box, plan)
        took = time.monotonic() - began
    finally:
        box.close()
    assert [r.inline for r in graded.runners] == [("answer",)] * 2
    for name in ("contradicted", "original"):
        (result,) = graded.verdicts[name].results
        assert result.error and "timed out" in result.error, result
    # its own timeout ended it, not the host's budget for the whole run (3 s + 30)
    assert took < 3 + 20, took


def test_a_job_run_in_the_runner_that_will_not_stop_ends_the_grading_with_no_verdict(
    pool: SandboxPool, backend: str, tmp_path: Path
) -> None:
    from termgym.errors import GraderError

    task = _alone(tmp_path, HOLDS_ON, timeout=3)
    box, plan = _episode(backend, task)
    try:
        began = time.monotonic()
        with pytest.raises(GraderError, match="no authentic report"):
            _grade(pool, box, plan)
        took = time.monotonic() - began
    finally:
        box.close()
    # the runner left GRACE seconds after the timeout, before the host's budget (3 s + 30)
    assert took < 3 + 20, took
