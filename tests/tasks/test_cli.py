"""`termgym tasks` lists and validates task folders; `python -m termgym.tasks validate` too."""

from __future__ import annotations

from click.testing import CliRunner

from termgym.cli.task_cmds import check, tasks
from termgym.tasks.__main__ import main as validate_main


def test_tasks_lists_extra_folders_with_their_rules(task_folder):
    folder = task_folder(name="listed-task")
    result = CliRunner().invoke(tasks, ["--path", str(folder.parent)])
    assert result.exit_code == 0, result.output
    line = next(row for row in result.output.splitlines() if row.startswith("listed-task"))
    assert "original/contradicted/withheld/swapped/sampled" in line and "limit=10" in line


def test_tasks_validate_exits_1_naming_the_broken_task(task_folder, monkeypatch):
    folder = task_folder(name="broken-task", rule={"value": 500})
    monkeypatch.setenv("TERMGYM_TASKS_PATH", str(folder.parent))
    result = CliRunner().invoke(tasks, ["--validate"])
    assert result.exit_code == 1
    assert "broken-task" in result.output and "expected a value within range" in result.output


def test_module_validate_reports_each_folder(task_folder, capsys):
    good = task_folder(name="good-task")
    bad = task_folder(name="bad-task", rule={"contradict": 10})
    assert validate_main(["validate", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "ok   good-task" in out
    assert "FAIL" in out and "contradict: expected a value different from value 10" in out


def test_check_refuses_an_unknown_backend_and_no_jobs_before_any_check() -> None:
    """An unknown backend failed each of a task's checks on a line of its own; -j 0 was
    taken."""
    result = CliRunner().invoke(check, ["fuel-planner", "--backend", "dockr"])
    assert result.exit_code == 1
    assert "got 'dockr'. Did you mean 'docker'?" in result.output
    assert "FAIL" not in result.output
    result = CliRunner().invoke(check, ["fuel-planner", "--jobs", "0"])
    assert result.exit_code == 2 and "--jobs" in result.output
