"""Every bundled grader kind judges a real final state in a real container, in one exec.

`grade_rulesets` runs the graders in place (in the container that holds the state); `grade`
stops the container and grades a copy of its work in a clean verifier, so each test starts
a container of its own."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from termgym.check import run_solution
from termgym.errors import GraderError
from termgym.grading import grade, grade_rulesets, prepare
from termgym.kinds import (
    BaseGrader,
    Job,
    JobOutput,
    Outcome,
    register_grader,
    registered_graders,
    unregister_grader,
)
from termgym.sandbox import Sandbox, SandboxConfig, make_sandbox
from termgym.tasks import GraderSpec, RuleDraw, RuleSet, Task, instantiate, load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
BUNDLED_KINDS = {"pytest", "script", "file", "json", "regex", "python"}

pytestmark = pytest.mark.docker


@pytest.fixture
def sandbox(docker_engine: None) -> Iterator[Sandbox]:
    box = make_sandbox("docker", SandboxConfig(workdir="/app"))
    box.start()
    yield box
    box.close()


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(FIXTURES / "all-kinds")


def _fresh(sandbox: Sandbox, task: Task, variant: str = "contradicted"):
    # the authored contradict value: the tests below spell out the rule sets it gives
    plan = instantiate(task, variant, seed=1, draw=RuleDraw(contradict="fixed"))
    prepare(sandbox, plan)
    return plan


def _only(plan, *specs: GraderSpec):
    rules = plan.rulesets[0].rules
    return dataclasses.replace(plan, rulesets=(RuleSet(plan.variant, rules, tuple(specs)),))


def test_bundled_kinds_arrive_through_the_entry_point_group():
    assert set(registered_graders()) >= BUNDLED_KINDS


def test_each_kind_passes_the_enforced_rule_and_fails_the_other(sandbox, task):
    plan = _fresh(sandbox, task)
    run_solution(sandbox, plan, task.spec.oracle)
    verdicts, timings = grade_rulesets(sandbox, task, plan.rulesets)
    new, old = verdicts["contradicted"], verdicts["original"]
    assert {r.kind for r in new.results} == BUNDLED_KINDS
    assert [(r.grader, r.passed, r.score) for r in new.results] == [
        (g.name, True, 1.0) for g in task.spec.graders
    ]
    assert {r.grader: r.passed for r in old.results} == {g.name: False for g in task.spec.graders}
    assert {r.grader: r.score for r in old.results}["tests"] == 0.5  # one of two tests holds
    assert new.passed is True and old.passed is False and old.score == pytest.approx(0.5 / 6)
    assert set(timings) == {"inject", "run", "read"}


def test_pytest_runs_once_for_all_rule_sets(sandbox, task):
    plan = _fresh(sandbox, task)
    run_solution(sandbox, plan, task.spec.oracle)
    verdicts, _ = grade_rulesets(sandbox, task, plan.rulesets)
    new, old = (verdicts[n].results[0] for n in ("contradicted", "original"))
    assert new.kind == "pytest" and new.duration == old.duration
    assert new.details["tests"] == old.details["tests"] == 2


_FAKE_PASS_CONFTEST = """\
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    item.runtest = lambda: None
"""
_FAKE_PYTEST = """\
import os, sys
report = os.environ.get("TERMGYM_RESULT_DIR", "/tmp") + "/junit.xml"
open(report, "w").write('<testsuite><testcase name="x"/></testsuite>')
sys.exit(0)
"""


def test_planted_scores_reports_and_plugins_are_ignored(sandbox, task, tmp_path):
    plan = _fresh(sandbox, task)
    planted = {
        "/app/out.txt": "0\n",
        "/app/out.json": '{"limit": 0}\n',
        "/app/score": "1\n",
        "/app/junit.xml": '<testsuite><testcase name="test_out_txt"/></testsuite>\n',
        "/app/pytest.py": _FAKE_PYTEST,
        "/app/termgym_pytest.py": _FAKE_PYTEST,
        "/tmp/.termgym-results-planted/score": "1\n",
    }
    for folder in ("/app", "/tmp", ""):
        planted[f"{folder}/conftest.py"] = _FAKE_PASS_CONFTEST
        planted[f"{folder}/pytest.ini"] = "[pytest]\naddopts = -p no:junitxml\n"
    for index, (dest, content) in enumerate(planted.items()):
        (tmp_path / str(index)).write_text(content)
        sandbox.copy_in(tmp_path / str(index), dest)
    report = grade(sandbox, plan, shadow=False)
    assert {r.grader: r.passed for r in report.verdict.results} == {
        g.name: False for g in task.spec.graders
    }


def test_grader_files_never_enter_the_agents_sandbox(sandbox, task, tmp_path):
    plan = _fresh(sandbox, task)
    marker = "pytest kind: out.txt holds the limit"
    search = ["grep", "-rlsF", marker, "/", "--exclude-dir=proc", "--exclude-dir=sys"]
    assert sandbox.exec(search, workdir="/", timeout=60).output.strip() == ""
    run_solution(sandbox, plan, task.spec.oracle)
    assert grade(sandbox, plan).passed is True
    for folder in ("/tmp", "/var/lib", "/app"):  # the stopped container, read through the engine
        sandbox.copy_out(folder, tmp_path / folder.strip("/"))
    found = [p for p in tmp_path.rglob("*") if p.is_file() and marker in p.read_text("latin-1")]
    assert found == [] and not (tmp_path / "var/lib/termgym-verifier").exists()
    assert list((tmp_path / "tmp").glob(".termgym-*")) == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            GraderSpec(name="broken", kind="pytest", path="graders/test_broken.py"),
            r"grader 'broken' \(pytest\) exited 2 \(collection or usage error\)",
        ),
        (
            GraderSpec(name="silent", kind="script", path="graders/no_score.sh"),
            r"grader 'silent' \(script\) wrote no score to \$TERMGYM_SCORE_FILE \(exit 3\)",
        ),
        (
            GraderSpec(name="slow", kind="script", path="graders/slow.sh", timeout=1),
            r"grader 'slow' \(script\) timed out after 1\.\ds",
        ),
        (
            GraderSpec(name="buggy", kind="python", callable="check_out:crash"),
            r"(?s)grader 'buggy' \(python\) crashed: .*RuntimeError: grader bug",
        ),
        (
            GraderSpec(name="stuck", kind="python", callable="check_out:hang", timeout=1),
            r"grader 'stuck' \(python\) timed out",
        ),
    ],
    ids=["collection-error", "no-score", "script-timeout", "call-raises", "call-timeout"],
)
def test_crashing_or_timing_out_graders_raise_grader_errors_with_the_partial_report(
    sandbox, task, spec, message
):
    plan = _fresh(sandbox, task)
    run_solution(sandbox, plan, task.spec.oracle)
    good = task.spec.graders[0]
    with pytest.raises(GraderError, match=message) as caught:
        grade(sandbox, _only(plan, good, spec))
    verdict = caught.value.report.verdict
    broken = {r.grader: r for r in verdict.results}
    assert broken[spec.name].score is None and broken[spec.name].passed is None
    assert broken[good.name].passed is True
    assert verdict.score is None and verdict.passed is None


class _ExitCodeGrader(BaseGrader):
    """A third-party kind: passes when `command` exits 0 in the sandbox."""

    kind = "exit-code"

    def job(self, spec: GraderSpec, task_root: Path) -> Job:
        return Job(argv=("bash", "-c", spec.params["command"]))

    def read(self, spec: GraderSpec, output: JobOutput) -> Mapping[str, Outcome]:
        self.fail_on_error(spec, output)
        passed = output.exit_code == 0
        return {n: Outcome(float(passed), passed) for n in output.rulesets}


@pytest.fixture
def exit_code_kind() -> Iterator[str]:
    register_grader("exit-code", _ExitCodeGrader)
    yield "exit-code"
    unregister_grader("exit-code")


def test_a_registered_third_party_kind_grades_with_the_rules(sandbox, task, exit_code_kind):
    plan = _fresh(sandbox, task)
    run_solution(sandbox, plan, task.spec.oracle)
    command = (
        'test "$(cat out.txt)" = "$(python3 -c "import json,os; '
        "print(json.loads(os.environ['TERMGYM_RULES'])['limit'])\")\""
    )
    spec = GraderSpec(name="custom", kind=exit_code_kind, command=command)
    plan = dataclasses.replace(
        plan,
        rulesets=(
            RuleSet("contradicted", {"limit": 20}, (spec,)),
            RuleSet("original", {"limit": 10}, (spec,)),
        ),
    )
    report = grade(sandbox, plan)
    assert report.matrix == {"contradicted": {"custom": True}, "original": {"custom": False}}
    assert report.episode_class == "adapted"


def test_a_deleted_workdir_fails_every_grader_rather_than_the_grading(sandbox, task):
    plan = _fresh(sandbox, task)
    sandbox.run("cd / && rm -rf /app")  # the agent deletes its own workdir, then grading
    report = grade(sandbox, plan)
    assert report.matrix["contradicted"] == {g.name: False for g in task.spec.graders}
    call = next(r for r in report.verdict.results if r.kind == "python")
    assert "out.txt is missing" in call.message
