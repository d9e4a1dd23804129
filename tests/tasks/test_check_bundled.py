"""`termgym check` passes on every bundled task: oracle passes all variants, memorized is stale."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from termgym.cli.task_cmds import check
from termgym.tasks import BUNDLED, task_dirs


@pytest.mark.docker
@pytest.mark.slow
def test_check_passes_on_all_bundled_tasks(docker_engine):
    bundled = [t for t, folder in task_dirs([]).items() if folder.parent == BUNDLED]
    if not bundled:
        pytest.skip("environments/ holds no tasks yet")
    result = CliRunner().invoke(check, [*bundled, "--backend", "docker", "--jobs", "3"])
    assert result.exit_code == 0, result.output
    for task_id in bundled:
        assert f"{task_id:<20} contradicted  memorized  stale" in result.output
