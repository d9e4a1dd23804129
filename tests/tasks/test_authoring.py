"""What a new task author hit working from docs/task-format.md alone, each fixed and kept so."""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

import termgym
from termgym._task_paths import BUNDLED, _added
from termgym._vocabulary import describe_error
from termgym.analysis.audit import PLATFORM_PATTERNS
from termgym.cli import main
from termgym.errors import GraderError, TaskNotFound, TaskSpecError
from termgym.grading import GradeReport, GraderResult, Verdict
from termgym.kinds import tail
from termgym.tasks import get_task, load_task, render, task_dirs


@pytest.fixture(autouse=True)
def _forget_added_folders():
    before = list(_added)
    yield
    _added[:] = before


@pytest.mark.parametrize(
    ("grader", "field"),
    [
        ({"name": "re", "kind": "regex", "path": "out.txt", "pattern": "^{{ limt }}$"}, "pattern"),
        (
            {
                "name": "no",
                "kind": "regex",
                "path": "out.txt",
                "pattern": "{{ lmit }}",
                "expect": "no-match",
            },
            "pattern",
        ),  # fmt: skip
        (
            {"name": "js", "kind": "json", "path": "o.json", "key": "a", "equals": "{{ x }}"},
            "equals",
        ),
    ],
)
def test_a_placeholder_naming_no_rule_in_grader_params_fails_at_load(task_folder, grader, field):
    folder = task_folder(spec={"grader_pool": [grader]})
    with pytest.raises(
        TaskSpecError,
        match=rf"task\.yaml: field 'grader_pool\[0\]' \({grader['name']}\) param '{field}': "
        r"expected placeholders naming declared rules \['limit'\]",
    ):
        load_task(folder)


def test_register_tasks_makes_the_folder_known_to_termgym_make(task_folder, tmp_path):
    folder = task_folder(name="authored-task")
    with pytest.raises(TaskNotFound) as missing:
        get_task("authored-task")
    message = str(missing.value)
    assert str(BUNDLED) in message and "register_tasks" in message and "--path" in message
    ids = termgym.register_tasks(str(folder.parent))
    assert "termgym/authored-task-v0" in ids
    env = termgym.make("authored-task", backend="local", allow_local=True)
    assert env.task_id == "authored-task"


@pytest.mark.parametrize("kind", ["missing", "empty", "file"])
def test_a_task_path_that_holds_no_task_is_an_error(tmp_path, kind):
    target = tmp_path / kind
    if kind == "empty":
        target.mkdir()
    elif kind == "file":
        target.write_text("not a folder")
    with pytest.raises(TaskNotFound, match="Expected"):
        termgym.register_tasks(str(target))
    for command in (["tasks"], ["run", "--agent", "oracle"], ["check"], ["play", "x"]):
        result = CliRunner().invoke(main, [*command, "--path", str(target)])
        assert result.exit_code == 2, (command, result.output)
        assert "Invalid value for '--path'" in result.output


def test_the_same_id_in_two_folders_warns_naming_both(tmp_path):
    shadow = tmp_path / "mine"
    shutil.copytree(BUNDLED / "fuel-planner", shadow / "fuel-planner")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = task_dirs([shadow])
    assert found["fuel-planner"] == shadow / "fuel-planner"
    [warning] = [w for w in caught if "fuel-planner" in str(w.message)]
    assert str(shadow / "fuel-planner") in str(warning.message)
    assert str(BUNDLED / "fuel-planner") in str(warning.message)


@pytest.mark.filterwarnings("ignore:Sandbox backend 'local' isolates nothing")
def test_termgym_run_takes_tasks_from_path(task_folder, tmp_path):
    folder = task_folder(name="path-task")
    result = CliRunner().invoke(
        main,
        ["run", "--agent", "oracle", "--tasks", "path-task", "--variants", "original",
         "--path", str(folder.parent), "--backend", "local", "--out", str(tmp_path / "run"),
         "--no-report"],
        env={"TERMGYM_ALLOW_LOCAL": "1"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "1 episodes run" in result.output


def test_an_inline_withheld_block_on_its_own_line_leaves_no_empty_line():
    text = (
        "Rules:\n{{# limit }}At most {{ limit }}.{{/ limit }}\nNext\n"
        "Also {{# limit }}x{{/ limit }}y\n"
    )
    assert render(text, {"limit": 5}, withheld=["limit"]) == "Rules:\nNext\nAlso y\n"
    assert render(text, {"limit": 5}) == "Rules:\nAt most 5.\nNext\nAlso xy\n"


def test_error_messages_name_their_class_once():
    inner = GraderError("GraderError: the report is missing")
    assert describe_error(inner) == "GraderError: the report is missing"
    assert describe_error(GraderError("no report")) == "GraderError: no report"


def test_a_grader_error_is_named_once_for_all_rule_sets_and_never_cut_mid_line():
    trace = "\n".join(f"line {n} of the traceback, long enough to matter" for n in range(60))
    error = f"grader 'g' (python) crashed: {tail(trace, 800)}"
    result = GraderResult("g", "python", "x", None, None, error=error)
    verdicts = {
        name: Verdict(
            name, {"limit": 1}, (GraderResult("g", "python", name, None, None, error=error),)
        )
        for name in ("contradicted", "original")
    }
    report = GradeReport("contradicted", "contradicted", verdicts, None)
    assert report.why.count("crashed") == 1 and "[contradicted, original]" in report.why
    kept = tail(trace, 800).splitlines()
    assert kept[0] == "[...]" and all(re.fullmatch(r"line \d+ of .*matter", k) for k in kept[1:])
    assert result.error is not None


def test_the_bundled_hard_coded_solutions_say_nothing_the_audit_looks_for():
    patterns = [re.compile(p, re.I) for group in PLATFORM_PATTERNS.values() for p in group]
    for script in sorted(Path(BUNDLED).glob("*/solution/*.sh")):
        text = script.read_text()
        assert not [m.group(0) for p in patterns for m in p.finditer(text)], script
