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
from termgym.grading import grade, prepare
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
