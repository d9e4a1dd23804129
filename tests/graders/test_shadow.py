"""Shadow grading classes an episode by its final state under the new and the old rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from termgym.check import check_tasks
from termgym.grading import classify
from termgym.tasks import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        (True, False, "adapted"),
        (False, True, "stale"),
        (True, True, "both"),
        (False, False, "neither"),
        (None, True, None),
    ],
)
def test_classes_follow_the_new_and_old_verdicts(new, old, expected):
    assert classify(new, old) == expected


@pytest.mark.docker
def test_oracle_adapts_and_memorized_goes_stale_on_the_tiny_task(docker_engine):
    rows = check_tasks([load_task(FIXTURES / "tiny-limit")], "docker", jobs=3)
    found = {(r.variant, r.solution): r for r in rows}
    assert all(r.ok is not False for r in rows), [r for r in rows if r.ok is False]
    assert found[("original", "oracle")].episode_class is None
    assert found[("contradicted", "oracle")].episode_class == "adapted"
    assert found[("contradicted", "memorized")].episode_class == "stale"
    assert found[("sampled", "oracle")].episode_class == "adapted"
    assert found[("swapped", "oracle")].episode_class == "both"
    withheld = found[("withheld", "memorized")]
    assert withheld.ok is None and withheld.own is True  # it knew the rule it was never shown
    assert found[("withheld", "-")].ok is True


@pytest.mark.docker
def test_check_exits_1_naming_a_memorized_solution_that_reads_the_task(docker_engine, tmp_path):
    import shutil

    from click.testing import CliRunner

    from termgym.cli.task_cmds import check

    folder = tmp_path / "tiny-limit"
    shutil.copytree(FIXTURES / "tiny-limit", folder)
    shutil.copy(folder / "solution" / "oracle.sh", folder / "solution" / "memorized.sh")
    result = CliRunner().invoke(check, [str(folder), "--backend", "docker", "--jobs", "3"])
    assert result.exit_code == 1
    assert "1 failure(s)" in result.output
    assert (
        "FAIL tiny-limit [contradicted] memorized: memorized solution should fail the "
        "contradicted rules and pass the original ones; it passed the contradicted and "
        "failed the original" in result.output
    )
