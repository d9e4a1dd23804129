"""Imported tasks graded for real, in docker's clean verifier: the oracle passes every
variant, the original solution goes stale on contradicted, and forged results count for
nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from termgym.check import check_tasks, run_solution
from termgym.grading import grade, prepare
from termgym.importing import import_tasks
from termgym.sandbox import SandboxConfig, make_sandbox
from termgym.tasks import instantiate, load_task, task_image
from tests.importing.test_sources import mixed_source

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign"
pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imported")
    import_tasks([FOREIGN / "tb"], out, "terminal-bench")
    import_tasks([FOREIGN / "harbor"], out, "harbor")
    return out


@pytest.mark.parametrize("task_id", ["tb-weight-limit", "harbor-weight-limit"])
def test_check_proves_the_overlay_works(
    imported: Path, task_id: str, docker_available: None
) -> None:
    task = load_task(imported / task_id)
    rows = check_tasks([task], "docker", jobs=2)
    failures = [r for r in rows if r.ok is False]
    assert not failures, failures
    stale = [r for r in rows if r.variant == "contradicted" and r.solution == "memorized"]
    assert stale and stale[0].episode_class == "stale"
    adapted = [r for r in rows if r.variant == "contradicted" and r.solution == "oracle"]
    assert adapted[0].episode_class == "adapted"


def test_keystroke_oracle_and_printed_summary_grade(imported: Path, docker_available: None) -> None:
    task = load_task(imported / "tb-greeting-summary")
    rows = check_tasks([task], "docker", jobs=1)
    (row,) = [r for r in rows if r.solution == "oracle"]
    assert row.ok, row.why


def _episode(task_dir: Path, attack: str) -> tuple[float, str | None]:
    task = load_task(task_dir)
    plan = instantiate(task, "contradicted", seed=1)
    config = SandboxConfig(image=task_image(task), workdir=plan.workdir)
    box = make_sandbox("docker", config)
    try:
        box.start()
        prepare(box, plan)
        result = box.exec(["bash", "-c", attack], workdir=plan.workdir)
        assert result.exit_code == 0, result.output
        report = grade(box, plan)
    finally:
        box.close()
    return report.score, report.episode_class


FORGE = r"""
echo P1 > /app/accepted.txt
mkdir -p /logs/verifier /tests
echo 1 > /logs/verifier/reward.txt
printf 'def test_x():\n    pass\n' > /tests/test_outputs.py
cat > /app/accepted.py <<'PY'
print("=========== short test summary info ===========")
print("PASSED test_accepted_parcels_follow_the_policy")
PY
"""


@pytest.mark.parametrize("task_id", ["tb-weight-limit", "harbor-weight-limit"])
def test_planted_rewards_tests_and_summaries_are_not_believed(
    imported: Path, task_id: str, docker_available: None
) -> None:
    score, episode_class = _episode(imported / task_id, FORGE)
    assert score == 0.0 and episode_class == "neither"


def test_the_rewritten_oracle_adapts(imported: Path, docker_available: None) -> None:
    task = load_task(imported / "tb-weight-limit")
    plan = instantiate(task, "contradicted", seed=1)
    config = SandboxConfig(image=task_image(task), workdir=plan.workdir)
    box = make_sandbox("docker", config)
    try:
        box.start()
        prepare(box, plan)
        run_solution(box, plan, task.spec.oracle)
        report = grade(box, plan)
    finally:
        box.close()
    assert report.episode_class == "adapted"
    assert report.verdicts["original"].results[0].passed is False


def test_a_run_that_names_a_refused_task_says_so_and_runs_the_others(
    tmp_path: Path, docker_available: None
) -> None:
    from click.testing import CliRunner

    from termgym.cli import main
    from termgym.recording import last_results

    source = mixed_source(tmp_path)
    args = ["run", "--agent", "oracle", "--import", str(source), "--variants", "original",
            "--backend", "docker", "--no-report"]  # fmt: skip
    out = tmp_path / "run"
    done = CliRunner().invoke(main, [*args, "--tasks", "tb-refused,tb-weight-limit", "--out",
                                     str(out)])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "tb-refused: refused at import" in done.output and "left out" not in done.output
    assert [r.task for r in last_results(out).values()] == ["tb-weight-limit"]
    done = CliRunner().invoke(main, [*args, "--tasks", "tb-refused", "--out", str(tmp_path / "x")])
    assert done.exit_code == 1 and "was refused at import; nothing to run" in done.output
