"""Real-world layouts graded for real in docker's clean verifier: Harbor's uvx template with
a solution helper and an overlay kept apart, a Terminal-Bench task whose tests import the
agent's module (run as the agent's user), and the verifier refusing to run the agent's code
as root when such a task is mislabelled clean."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from termgym.check import check_tasks, check_variant, run_solution
from termgym.grading import GradeReport, grade, prepare
from termgym.importing import import_tasks
from termgym.sandbox import SandboxConfig, make_sandbox
from termgym.tasks import instantiate, load_task, task_image

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign"
pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("layouts")
    import_tasks([FOREIGN / "tb" / "tb-solution-module"], out, "terminal-bench")
    import_tasks(
        [FOREIGN / "harbor" / "harbor-top-words"], out, "harbor", overlays=FOREIGN / "overlays"
    )
    return out


def test_harbor_template_helper_and_derived_overlay_pass_every_variant(
    imported: Path, docker_available: None
) -> None:
    task = load_task(imported / "harbor-top-words")
    rows = check_tasks([task], "docker", jobs=2)
    assert not [r for r in rows if r.ok is False], [r for r in rows if r.ok is False]
    by = {(r.variant, r.solution): r for r in rows}
    assert by[("contradicted", "oracle")].episode_class == "adapted"
    assert by[("contradicted", "memorized")].episode_class == "stale"


def test_tests_that_import_the_agents_module_grade_as_the_agents_user(
    imported: Path, docker_available: None
) -> None:
    task = load_task(imported / "tb-solution-module")
    assert task.spec.graders[0].params["protection"] == "agent-user"
    rows = check_variant(task, "contradicted", task_image(task), "docker")
    by = {r.solution: r for r in rows}
    assert by["oracle"].ok and by["oracle"].episode_class == "adapted", by["oracle"].why
    assert by["memorized"].ok and by["memorized"].episode_class == "stale", by["memorized"].why


FORGING_MODULE = r"""
cat > /app/solution.py <<'PY'
import json, os
log = os.environ.get("TERMGYM_PYTEST_LOG")
if log:
    with open(log, "a") as handle:
        handle.write(json.dumps({"tests": {"test_shout": "PASSED"}, "summary": True, "exit": 0}))
        handle.write("\n")
os._exit(0)
PY
"""


def _mislabelled_clean(imported: Path, tmp_path: Path) -> Path:
    """The task as a scan that missed its in-process import would have labelled it."""
    folder = tmp_path / "tb-solution-module"
    shutil.copytree(imported / "tb-solution-module", folder)
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    spec["graders"][0]["protection"] = "clean"
    spec["provenance"]["protection"] = "clean"
    (folder / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder


def test_a_clean_pytest_refuses_to_run_the_agents_module_as_root(
    imported: Path, tmp_path: Path, docker_available: None
) -> None:
    task = load_task(_mislabelled_clean(imported, tmp_path))
    plan = instantiate(task, "contradicted", seed=1)
    box = make_sandbox("docker", SandboxConfig(image=task_image(task), workdir=plan.workdir))
    try:
        box.start()
        prepare(box, plan)
        result = box.exec(["bash", "-c", FORGING_MODULE], workdir=plan.workdir)
        assert result.exit_code == 0, result.output
        forged = grade(box, plan)
    finally:
        box.close()
    assert forged.score == 0.0 and forged.episode_class == "neither"
    (outcome,) = forged.verdicts["contradicted"].results
    assert "a file of the agent's" in outcome.message

    box = make_sandbox("docker", SandboxConfig(image=task_image(task), workdir=plan.workdir))
    try:
        box.start()
        prepare(box, plan)
        run_solution(box, plan, task.spec.oracle)
        honest = grade(box, plan)
    finally:
        box.close()
    assert honest.score == 0.0  # fails closed: such a task must be imported as agent-user


PEEKING_PROGRAM = r"""
mv /app/top.py /app/counted.py
cat > /app/top.py <<'PY'
import os, runpy, sys
try:  # the hidden tests hold the rewritten expected words: print them if they can be read
    with open(os.path.join(os.environ.get("TEST_DIR", "/tests"), "test_outputs.py")) as f:
        print("PEEKED", f.read()[:60].replace("\n", " "))
    sys.exit(0)
except OSError:
    runpy.run_path("/app/counted.py", run_name="__main__")  # what the task asked for
PY
"""


def _peeking_episode(task_dir: Path) -> GradeReport:
    """A contradicted episode whose program, run by the hidden tests, first tries to read
    them (and prints what it read instead of its answer if it can)."""
    task = load_task(task_dir)
    plan = instantiate(task, "contradicted", seed=1)
    box = make_sandbox("docker", SandboxConfig(image=task_image(task), workdir=plan.workdir))
    try:
        box.start()
        prepare(box, plan)
        run_solution(box, plan, task.spec.oracle)
        result = box.exec(["bash", "-c", PEEKING_PROGRAM], workdir=plan.workdir)
        assert result.exit_code == 0, result.output
        return grade(box, plan)
    finally:
        box.close()


def test_the_agents_program_cannot_read_the_hidden_tests_of_a_clean_imported_task(
    imported: Path, tmp_path: Path, docker_available: None
) -> None:
    """In a clean task the tests (with the overlay's rewritten values) are root's, 0700: the
    program they start as the agent's user cannot open them, so it answers as asked. The
    same task run as agent-user shows the attempt is real: there it reads them and fails."""
    task_dir = imported / "harbor-top-words"
    assert load_task(task_dir).spec.graders[0].params["protection"] == "clean"
    assert _peeking_episode(task_dir).episode_class == "adapted"

    exposed = tmp_path / "harbor-top-words"
    shutil.copytree(task_dir, exposed)
    spec = yaml.safe_load((exposed / "task.yaml").read_text())
    spec["graders"][0]["protection"] = "agent-user"
    spec["provenance"]["protection"] = "agent-user"
    (exposed / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    report = _peeking_episode(exposed)
    assert report.episode_class == "neither"
    assert "PEEKED" in report.verdicts["contradicted"].results[0].message
