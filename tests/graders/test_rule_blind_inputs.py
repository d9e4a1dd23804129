"""What the hidden tests give the agent's programs must not depend on the enforced rules.

The verifier fingerprints every program a grader starts as the agent's user
(`termgym_inputprint`), and `termgym check` compares the fingerprints of the same test
under different rule sets: a task whose tests build their inputs around the rule fails.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from termgym.check import check_tasks
from termgym.grading import ProgramStart, compare_inputs
from termgym.grading._starts import parse_starts
from termgym.tasks import load_task
from termgym.verifier import agentexec
from termgym.verifier import inputprint as _inputprint
from termgym.verifier.inputprint import Normalizer, Recorder, file_digest, tree_digest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


def start(ruleset: str, index: int = 0, **fields: object) -> ProgramStart:
    values: dict[str, object] = {
        "argv": ("python3", "/app/plan.py", "<tmp>/<dir0>/m.json"),
        "cwd": "/app",
    }
    values.update(fields)
    return ProgramStart(grader="g", test="t.py::test_x", ruleset=ruleset, index=index, **values)  # type: ignore[arg-type]


def test_temporary_paths_are_named_by_order_of_appearance_not_by_run() -> None:
    one = Normalizer(["/tmp/.termgym-io-abc/tmp"])
    two = Normalizer(["/tmp/.termgym-io-xyz/tmp"])
    a = "/tmp/.termgym-io-abc/tmp/test_plan_r0_0/m.json"
    b = "/tmp/.termgym-io-xyz/tmp/test_plan_r1_0/m.json"
    assert one.text(a) == two.text(b) == "<tmp>/<dir0>/m.json"
    assert one.text("--config=/tmp/tmpq1w2e3.ini") == two.text("--config=/tmp/tmpzz99.ini")
    assert one.text("/app/plan.py") == "/app/plan.py"


def test_the_recorder_hashes_what_the_test_wrote_and_not_what_the_program_wrote(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "base"
    (shared / "test_a0").mkdir(parents=True)
    recorder = Recorder(str(tmp_path / "record.jsonl"), os.getuid())
    recorder.context("t.py::test_a", "original", [str(shared)])
    manifest = shared / "test_a0" / "m.json"
    manifest.write_text('{"limit": 1}')
    first = recorder.before_start(
        ["python3", "/app/plan.py", str(manifest)], "/app", {"HOME": "/x"}, [str(shared)]
    )
    assert first["argv"][2] == "<tmp>/<dir0>/m.json"
    assert first["given"] == {"<tmp>/<dir0>/m.json": file_digest(str(manifest))}
    (shared / "test_a0" / "out.txt").write_text("the program's output")
    recorder.finished(first, [str(shared)])
    manifest.write_text('{"limit": 2}')  # rewritten in place by the test: an input again
    second = recorder.before_start(["python3", "/app/plan.py"], "/app", {}, [str(shared)])
    assert list(second["given"]) == ["<tmp>/<dir0>/m.json"]
    recorder.finished(second, [str(shared)])
    text = (tmp_path / "record.jsonl").read_text()
    starts, problems = parse_starts(text, "plan", ["original"])
    assert problems == ()
    assert [s.index for s in starts] == [0, 1]
    assert starts[0].given != starts[1].given


def test_a_path_the_agents_user_cannot_open_is_no_input_of_its_program(tmp_path: Path) -> None:
    """The clean verifier's /tests (root's, 0700) differs between rule sets when an overlay
    rewrites the tests, and an imported test hands its path over in TEST_DIR: the agent's
    program cannot open it, so it is noted as closed, not hashed."""
    agent = 60000
    base = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's own tmp_path is root's, 0700
    try:
        base.chmod(0o755)
        closed = base / "tests"
        closed.mkdir(mode=0o700)
        (closed / "test_outputs.py").write_text("assert top(3)")
        opened = base / "open"
        opened.mkdir(mode=0o755)
        (opened / "data.txt").write_text("same for every rule")
        assert not _inputprint.reachable(str(closed), agent)
        assert not _inputprint.reachable(str(closed / "test_outputs.py"), agent)
        assert _inputprint.reachable(str(opened / "data.txt"), agent)
        recorder = Recorder(str(tmp_path / "record.jsonl"), agent)
        env = {"TEST_DIR": str(closed), "DATA": str(opened / "data.txt")}
        record = recorder.before_start(["python3", "/app/top.py"], "/app", env, [])
        assert record["named"]["env TEST_DIR"] == "closed to the agent's user"
        assert record["named"]["env DATA"] == file_digest(str(opened / "data.txt"))
    finally:
        shutil.rmtree(base)


def test_a_planted_fifo_or_symlink_is_noted_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to("/etc/shadow")
    assert file_digest(str(tmp_path / "fifo")) == "special"
    assert file_digest(str(tmp_path / "link")) == "symlink:/etc/shadow"


def test_a_named_folder_is_hashed_whole_but_only_so_far(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in "abcd":
        (tmp_path / name).write_text(name)
    whole = tree_digest(str(tmp_path))
    (tmp_path / "d").write_text("changed")
    assert tree_digest(str(tmp_path)) != whole
    monkeypatch.setattr(_inputprint, "TREE_LIMIT", 3)
    assert tree_digest(str(tmp_path)).endswith("(first 3 entries)")


def test_an_unreadable_record_line_is_reported_with_what_was_expected() -> None:
    starts, problems = parse_starts('{"index": 1, "argv": ["x"]}\nnot json\n', "plan", ["o"])
    assert len(starts) == 1
    assert problems and "expected one JSON object per program start" in problems[0]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"argv": ("python3", "/app/plan.py", "<tmp>/<dir0>/m-100.json")}, "argument 2"),
        ({"env": {"LIMIT": "100"}}, "environment variable LIMIT"),
        ({"stdin": "abc"}, "standard input differs"),
        ({"named": {"arg 1": "f00"}}, "argument 1 ('/app/plan.py')"),
        ({"given": {"<tmp>/<dir0>/m.json": "f00"}}, "wrote '<tmp>/<dir0>/m.json' under one"),
        ({"cwd": "<tmp>/<dir1>"}, "working folder"),
    ],
)
def test_a_difference_between_rule_sets_names_the_test_and_what_differs(
    change: dict[str, object], said: str
) -> None:
    found = compare_inputs([start("original"), start("contradicted", index=1, **change)])
    assert not found.ok
    [difference] = found.differences
    assert said in str(difference)
    assert "test t.py::test_x" in str(difference)
    assert "'original' and 'contradicted'" in str(difference)


def test_a_test_that_failed_under_one_rule_set_is_matched_as_far_as_it_went() -> None:
    starts = [start("original", 0), start("sampled", 1), start("sampled", 2)]
    assert not compare_inputs(starts).ok  # 1 program against 2: the count gives the rule away
    stopped = compare_inputs(starts, failed={("g", "original", "t.py::test_x")})
    assert stopped.ok and stopped.compared == 1
    shared = [start("original", 0, shared=True)]
    assert compare_inputs(shared).compared == 0


def test_a_grader_path_among_the_arguments_does_not_make_a_program_the_graders() -> None:
    helper = os.path.join(agentexec.GRADER_DIR, "helper.py")
    assert agentexec._graders_own([helper, "--check"])
    assert agentexec._graders_own(["/usr/bin/python3", "-I", helper, "x"])
    assert agentexec._graders_own([f"python3 {helper} --check"], shell=True)
    assert not agentexec._graders_own(["/app/bin/triage", agentexec.GRADER_DIR + "/logs"])
    assert not agentexec._graders_own(["python3", "/app/plan.py", helper])
    assert not agentexec._graders_own(["python3", "-c", f"exec(open('{helper}').read())"])
    assert not agentexec._graders_own([f"python3 {helper} && /app/evil"], shell=True)
    assert not agentexec._graders_own(["bash", "-c", f"{helper}; /app/evil"])


@pytest.mark.docker
@pytest.mark.slow
def test_check_fails_a_task_whose_tests_build_inputs_around_the_rule(docker_engine: None) -> None:
    rows = check_tasks(
        [load_task(FIXTURES / "leaky-batch"), load_task(FIXTURES / "blind-batch")], "docker", 3
    )
    found = {(r.task, r.solution): r for r in rows if r.expected == "blind"}
    leaky, blind = found[("leaky-batch", "tests")], found[("blind-batch", "tests")]
    assert leaky.ok is False
    assert (
        "the hidden tests' inputs differ between rule sets 'contradicted' and 'original': test "
        "graders/test_batches.py::test_a_full_batch_then_one_more, program 1 ('python3'): the "
        "file '<tmp>/<dir0>/ids.txt' the test wrote differs" in leaky.why
    )
    assert blind.ok is True, blind.why
    # 25 starts on original; on contradicted 25, and 6 under the original shadow, where the
    # oracle's batches (of 8) first differ from the expected ones (of 5) at 6 ids.
    assert blind.why == "56 program start(s), 1 test run(s) compared across rule sets"
    # Everything else about both tasks checks out: only the inputs row tells them apart.
    assert [r for r in rows if r.ok is False] == [leaky]
