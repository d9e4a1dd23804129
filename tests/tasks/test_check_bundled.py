"""`termgym check` passes on every bundled task: oracle passes all variants, memorized is stale."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from termgym.cli.task_cmds import check
from termgym.tasks import BUNDLED, task_dirs


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(1800)  # every bundled task's oracle on every variant: minutes when busy
def test_check_passes_on_all_bundled_tasks(docker_engine):
    bundled = [t for t, folder in task_dirs([]).items() if folder.parent == BUNDLED]
    if not bundled:
        pytest.skip("environments/ holds no tasks yet")
    result = CliRunner().invoke(check, [*bundled, "--backend", "docker", "--jobs", "3"])
    assert result.exit_code == 0, result.output
    for task_id in bundled:
        assert f"{task_id:<20} contradicted  memorized  stale" in result.output


@pytest.mark.bwrap
@pytest.mark.slow
@pytest.mark.timeout(1800)  # 39 checks in real sandboxes on a shared machine
def test_check_proves_the_impossible_variant_and_the_surface_of_three_tasks(base_rootfs):
    """The oracle follows the impossible task and fails, the memorized solution fails, the
    cheater passes; the oracle's answer under another seed's surface fails."""
    tasks = ("text-report", "csv-cleaning", "log-triage")
    result = CliRunner().invoke(check, [*tasks, "--backend", "bwrap", "--jobs", "2"])
    assert result.exit_code == 0, result.output
    for task in tasks:
        for row in (
            "impossible    oracle     honest    FAIL  FAIL  adapted  ok",
            "impossible    memorized  fails     FAIL  pass  stale    ok",
            "impossible    cheater    cheats    pass  FAIL  neither  ok",
            "original      replay     differs   FAIL  -     -        ok",
        ):
            assert f"{task:<20} {row}" in result.output, (task, row, result.output)
    assert result.output.count("fails seed 1's graders") == 3
    assert "untampered" not in result.output
