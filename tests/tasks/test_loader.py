"""A malformed task.yaml fails at load, naming the file, the field and what was expected."""

from __future__ import annotations

import re

import pytest

from termgym.errors import TaskNotFound, TaskSpecError
from termgym.tasks import BUNDLED, get_task, list_tasks, load_task, task_dirs


def test_the_fixture_task_loads(task_folder):
    task = load_task(task_folder())
    assert task.id == "tiny-limit"
    assert task.rules["limit"].value == 10
    assert "policy.txt" in task.text_files


def test_unknown_grader_kind_is_named_with_a_suggestion(task_folder):
    folder = task_folder(
        spec={"graders": [{"name": "t", "kind": "pytset", "path": "graders/test_limit.py"}]}
    )
    with pytest.raises(
        TaskSpecError,
        match=r"task\.yaml: field 'graders\[0\]' \(t\): unknown grader "
        r"kind 'pytset'.*Did you mean 'pytest'",
    ):
        load_task(folder)


def test_placeholder_naming_no_rule_fails(task_folder):
    folder = task_folder(files={"extra.md": "Max {{ limt }} per batch\n"})
    with pytest.raises(
        TaskSpecError,
        match=r"files/extra\.md: placeholder \{\{ limt \}\} names no "
        r"rule.*did you mean 'limit'",
    ):
        load_task(folder)


def test_rule_used_in_the_instruction_but_not_declared_fails(task_folder):
    folder = task_folder(spec={"instruction": "Use at most {{ budget }} items.\n"})
    with pytest.raises(
        TaskSpecError, match=r"instruction: placeholder \{\{ budget \}\} names no rule"
    ):
        load_task(folder)


def test_value_outside_its_range_fails(task_folder):
    with pytest.raises(
        TaskSpecError,
        match=r"field 'rules\.limit': value: expected a value within "
        r"range \[1, 100\], found 500",
    ):
        load_task(task_folder(rule={"value": 500}))


def test_contradict_equal_to_value_fails(task_folder):
    with pytest.raises(
        TaskSpecError, match=r"contradict: expected a value different from value 10"
    ):
        load_task(task_folder(rule={"contradict": 10}))


def test_contradict_out_of_range_fails(task_folder):
    with pytest.raises(
        TaskSpecError,
        match=r"contradict: expected a value within range \[1, 100\], "
        r"found 1000",
    ):
        load_task(task_folder(rule={"contradict": 1000}))


def test_value_of_the_wrong_type_fails(task_folder):
    with pytest.raises(
        TaskSpecError, match=r"rules\.limit': value: expected an int, found str 'ten'"
    ):
        load_task(task_folder(rule={"value": "ten"}))


def test_missing_oracle_fails(task_folder):
    with pytest.raises(
        TaskSpecError,
        match=r"field 'oracle': expected an oracle solution at "
        r"solution/nope\.sh, found no such file",
    ):
        load_task(task_folder(spec={"oracle": "solution/nope.sh"}))


def test_withheld_variant_still_stating_the_value_fails(task_folder):
    folder = task_folder(
        files={
            "policy.txt": "{{# limit }}\nAt most {{ limit }} items.\n{{/ limit }}\n"
            "Reminder: the batch limit is 10.\n"
        }
    )
    with pytest.raises(
        TaskSpecError,
        match=r"variant 'withheld'.*files/policy\.txt line 1 still "
        r"states limit's value '10'",
    ):
        load_task(folder)


def test_short_values_elsewhere_in_the_file_are_not_leaks(task_folder):
    folder = task_folder(
        rule={"value": 2, "contradict": 4},
        files={"policy.txt": "## Step 2\nAt most {{ limit }} items.\n"},
    )
    assert load_task(folder).rules["limit"].value == 2


def test_stated_in_file_without_the_placeholder_fails(task_folder):
    folder = task_folder(files={"policy.txt": "Batches are processed in order.\n"})
    with pytest.raises(
        TaskSpecError,
        match=r"rules\.limit\.stated_in'.*should state the rule "
        r"through \{\{ limit \}\}",
    ):
        load_task(folder)


def test_unbalanced_block_fails(task_folder):
    folder = task_folder(files={"policy.txt": "{{# limit }}\nAt most {{ limit }} items.\n"})
    with pytest.raises(
        TaskSpecError, match=r"files/policy\.txt: template: expected \{\{/ limit \}\}"
    ):
        load_task(folder)


def test_grader_file_missing_fails(task_folder):
    folder = task_folder(
        spec={"graders": [{"name": "t", "kind": "pytest", "path": "graders/gone.py"}]}
    )
    with pytest.raises(
        TaskSpecError, match=r"graders\[0\]' \(t\): kind pytest: path: expected an existing file"
    ):
        load_task(folder)


def test_grader_file_outside_graders_folder_fails(task_folder):
    folder = task_folder(
        spec={"graders": [{"name": "t", "kind": "script", "path": "solution/oracle.sh"}]}
    )
    with pytest.raises(TaskSpecError, match=r"expected a path under graders/"):
        load_task(folder)


def test_unknown_grader_param_fails(task_folder):
    folder = task_folder(
        spec={
            "graders": [
                {"name": "t", "kind": "regex", "path": "out.txt", "pattern": "x", "patern": "y"}
            ]
        }
    )
    with pytest.raises(
        TaskSpecError, match=r"kind regex takes params .* found unknown \['patern'\]"
    ):
        load_task(folder)


def test_swapped_without_a_pool_fails(task_folder):
    with pytest.raises(TaskSpecError, match=r"'swapped' needs a non-empty grader_pool"):
        load_task(task_folder(spec={"grader_pool": []}))


def test_id_must_match_the_folder(task_folder):
    with pytest.raises(TaskSpecError, match=r"field 'id': expected the folder name 'other'"):
        load_task(task_folder(name="other", spec={"id": "tiny-limit"}))


def test_unknown_field_is_rejected(task_folder):
    with pytest.raises(TaskSpecError, match=r"field 'grader': unknown field"):
        load_task(task_folder(spec={"grader": []}))


def test_missing_required_field_is_named(task_folder):
    with pytest.raises(TaskSpecError, match=r"field 'title': required field is missing"):
        load_task(task_folder(spec={"title": None}))


def test_invalid_yaml_names_the_file(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "task.yaml").write_text("id: bad\ntitle: [unclosed\n")
    with pytest.raises(
        TaskSpecError, match=re.escape(str(folder / "task.yaml")) + ": expected valid YAML"
    ):
        load_task(folder)


def test_extra_task_folders_come_from_the_env_var(task_folder, monkeypatch):
    folder = task_folder(name="from-env")
    monkeypatch.setenv("TERMGYM_TASKS_PATH", str(folder.parent))
    assert "from-env" in task_dirs()
    assert get_task("from-env").root == folder


def test_unknown_task_suggests_close_ids(task_folder):
    folder = task_folder(name="tiny-limit")
    with pytest.raises(TaskNotFound, match=r"no task 'tiny-limt'.*Did you mean 'tiny-limit'"):
        get_task("tiny-limt", paths=[folder.parent])


def test_every_bundled_task_loads():
    if not task_dirs([]) or not any(BUNDLED.iterdir()):
        pytest.skip("no bundled tasks in environments/ yet")
    tasks = list_tasks()
    assert {t.id for t in tasks} >= {
        p.name for p in BUNDLED.iterdir() if (p / "task.yaml").is_file()
    }


def test_a_task_not_found_names_a_searched_folder_that_is_not_there(tmp_path, monkeypatch):
    """A misspelt $TERMGYM_TASKS_PATH folder was listed among 'the folders searched' as if
    it had been read, so nothing said why its tasks were missing."""
    missing = tmp_path / "my-taks"
    monkeypatch.setenv("TERMGYM_TASKS_PATH", str(missing))
    with pytest.raises(TaskNotFound, match=re.escape(f"{missing} (no such folder), ")):
        get_task("no-task-has-this-id")  # not cargo-limit: another test may register examples
