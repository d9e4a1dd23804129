"""The TB 2.0 experiment at fixture size, in CI: `termgym run --import SOURCE --overlays DIR`
on two small tasks in Terminal-Bench 2.0's format, once with the memorizer (the task's own
solution) and once with the oracle (the overlay's rewritten solution), in real docker; then
`termgym check` proves both overlays. The real corpus is never touched here."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from termgym.check import check_tasks
from termgym.cli import main
from termgym.report import load_run
from termgym.tasks import load_task

TB2 = Path(__file__).parents[1] / "fixtures" / "tb2"
TASKS = ("backup-rotation", "flagged-payments")
Outcomes = dict[tuple[str, str], tuple[bool, str | None]]
pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _suite(agent: str, out: Path) -> Outcomes:
    """Run the perturbation suite with `agent`; (task, variant) -> (passed, class)."""
    done = CliRunner().invoke(
        main,
        ["run", "--agent", agent, "--import", str(TB2 / "tasks"), "--overlays",
         str(TB2 / "overlays"), "--variants", "original,contradicted,sampled", "--episodes", "1",
         "--backend", "docker", "--out", str(out), "--no-report"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "2 task(s) imported" in done.output
    run = load_run(out)
    assert not [s for s in run.summaries if s.error], [s.error for s in run.summaries]
    return {(s.task, s.variant): (s.passed, s.episode_class) for s in run.summaries}


@pytest.fixture(scope="module")
def memorizer(
    tmp_path_factory: pytest.TempPathFactory, docker_available: None
) -> tuple[Path, Outcomes]:
    out = tmp_path_factory.mktemp("suite") / "memorizer"
    return out, _suite("memorizer", out)


def test_the_tasks_own_solution_passes_original_and_goes_stale_when_the_rule_moves(
    memorizer: tuple[Path, Outcomes],
) -> None:
    _, found = memorizer
    assert set(found) == {(t, v) for t in TASKS for v in ("original", "contradicted", "sampled")}
    for task in TASKS:
        assert found[(task, "original")][0], task
        assert found[(task, "contradicted")] == (False, "stale"), task
        assert found[(task, "sampled")] == (False, "stale"), task


def test_the_rewritten_oracle_adapts_on_every_shifted_variant(tmp_path: Path) -> None:
    found = _suite("oracle", tmp_path / "oracle")
    for task in TASKS:
        assert found[(task, "original")][0], task
        assert found[(task, "contradicted")] == (True, "adapted"), task
        assert found[(task, "sampled")] == (True, "adapted"), task


def test_check_proves_both_fixture_overlays(
    memorizer: tuple[Path, Outcomes],
) -> None:
    out, _ = memorizer
    tasks = [load_task(out / "tasks" / t) for t in TASKS]
    rows = check_tasks(tasks, "docker", jobs=2)
    assert not [r for r in rows if r.ok is False], [r for r in rows if r.ok is False]
    for task in TASKS:
        mine = [r for r in rows if r.task == task and r.variant == "contradicted"]
        assert {r.solution: r.episode_class for r in mine} == {
            "oracle": "adapted",
            "memorized": "stale",
        }, task
