"""Reference agents in steps: the oracle reads what the task shows first, the memorizer never."""

from __future__ import annotations

import base64
import re
import subprocess

import pytest

from termgym.agents import SUBMIT, EpisodeContext, Reference, make_agent
from termgym.agents._reference import typed_step
from termgym.errors import TaskSpecError
from termgym.tasks import get_task, list_tasks, load_task, parse_solution, rule_files

ORACLE = """#!/usr/bin/env bash
# Reference solution for the test.
set -euo pipefail

# step: read the limit (withheld: from the rules told)
LIMIT=$(python3 -c 'import json, os
print(json.loads(os.environ["TERMGYM_WITHHELD_RULES"]).get("max_weight", "none"))')

# step: write it down
mkdir -p out
echo "limit=$LIMIT in $(basename "$PWD")" > out/limit.txt
"""
MEMORIZED = """#!/bin/bash
set -e
# step: write the remembered limit
mkdir -p out && echo "limit=100" > out/limit.txt
"""


def _plan(name: str, mode: str = "command", withheld=None, files=("policy/limits.json",)):
    ref = Reference(ORACLE, MEMORIZED, withheld or {}, workdir="/app", rule_files=tuple(files))
    agent = make_agent(name)
    agent.reset(EpisodeContext("t", "i", 20, mode=mode, reference=ref))
    actions = []
    while (action := agent.act({"screen": "root@sandbox:/app#"})) != SUBMIT:
        actions.append(action)
    return actions


def test_the_oracle_lists_the_workdir_and_reads_the_rule_files_before_its_steps() -> None:
    actions = _plan("oracle", withheld={"max_weight": 150})
    assert actions[:2] == ["ls -la", "cat policy/limits.json"]
    assert actions[2].splitlines()[:2] == [
        "# read the limit (withheld: from the rules told)",
        """export TERMGYM_WITHHELD_RULES='{"max_weight":150}'""",
    ]
    assert actions[3].splitlines()[0] == "# write it down"
    assert len(actions) == 4 and "set -euo" not in "".join(actions)  # the prelude is not sent


def test_the_memorizer_reads_nothing_and_is_told_nothing() -> None:
    actions = _plan("memorizer", withheld={"max_weight": 150})
    assert actions == [
        '# write the remembered limit\nmkdir -p out && echo "limit=100" > out/limit.txt\n'
    ]


def test_steps_run_one_after_another_in_one_shell_as_the_script_would(tmp_path) -> None:
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "limits.json").write_text('{"note": "max_weight withheld"}\n')
    shell = subprocess.Popen(
        ["bash", "--norc", "--noprofile"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, cwd=tmp_path, text=True,
    )  # fmt: skip
    script = "".join(a + "\n" for a in _plan("oracle", withheld={"max_weight": 150}))
    out, _ = shell.communicate(script, timeout=30)
    assert "policy" in out and "max_weight withheld" in out  # what the reading steps showed
    assert (tmp_path / "out" / "limit.txt").read_text() == f"limit=150 in {tmp_path.name}\n"


def test_keys_mode_types_plain_lines_and_encodes_what_a_terminal_would_change() -> None:
    assert typed_step("cat policy/limits.json\n") == "cat policy/limits.json<Enter>"
    assert typed_step("ls x<y") == "ls x<lt>y<Enter>"
    for command in ("echo one\necho two\n", "echo 'a!b'", "printf 'a\tb'"):
        typed = typed_step(command)
        assert typed.count("<Enter>") == 1 and "\t" not in typed and "!" not in typed
        encoded = re.search(r"echo (\S+) \| base64 -d", typed)
        assert encoded and base64.b64decode(encoded[1]).decode() == command
    keys = _plan("oracle", mode="keys")
    assert keys[:2] == ["ls -la<Enter>", "cat policy/limits.json<Enter>"]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (
            "#!/bin/bash\ncd /app\n# step: go\nls\n",
            r"line 2: expected only a shebang.*found 'cd /app'",
        ),
        ("# step: empty\n\n# step: next\nls\n", r"line 1: step 'empty' expected commands"),
        ("# step:\nls\n", r"line 1: expected '# step: TITLE', found no title"),
        ("# step: comments only\n# nothing\n", r"step 'comments only' expected commands"),
    ],
)
def test_a_badly_marked_script_is_refused_saying_where(script: str, message: str) -> None:
    with pytest.raises(TaskSpecError, match=message):
        parse_solution(script, "oracle.sh")


def test_a_script_without_marks_is_one_step_and_runs_whole() -> None:
    assert not parse_solution("#!/bin/bash\ncd /app\nmake\n").marked


def test_a_task_whose_oracle_is_badly_marked_fails_to_load(tmp_path) -> None:
    source = get_task("fuel-planner").root
    task = tmp_path / "fuel-planner"
    subprocess.run(["cp", "-r", str(source), str(task)], check=True)
    oracle = task / "solution" / "oracle.sh"
    oracle.write_text("APP=/app\n" + oracle.read_text())
    with pytest.raises(TaskSpecError, match=r"field 'oracle' \(solution/oracle.sh\): line 1"):
        load_task(task)


@pytest.mark.parametrize("task_id", [t.id for t in list_tasks()])
def test_every_bundled_task_shows_the_oracle_reading_and_the_memorizer_not(task_id) -> None:
    task = get_task(task_id)
    oracle = parse_solution(task.path(task.spec.oracle).read_text())
    memorized = parse_solution(task.path(task.spec.memorized).read_text())
    assert oracle.marked and memorized.marked
    files = rule_files(task.spec)
    assert files and all(task.path(f"{task.spec.files}/{f}").is_file() for f in files)
    for step in memorized.steps:  # the memorizer never opens a file that states a rule
        assert not any(re.search(rf"\b(cat|less|head|open)\b.*{re.escape(f)}", step.command)
                       for f in files), step.title  # fmt: skip


def test_in_keys_mode_the_agent_waits_for_the_prompt_before_its_next_step() -> None:
    ref = Reference(ORACLE, MEMORIZED, {}, workdir="/app", rule_files=("policy/limits.json",))
    agent = make_agent("oracle")
    agent.reset(EpisodeContext("t", "i", 20, mode="keys", reference=ref))
    opened = {"screen": "root@sandbox:/app#", "step": 0}
    assert agent.act(opened) == "ls -la<Enter>"
    running = {"screen": "root@sandbox:/app# ls -la\ntotal 8", "step": 1}
    assert agent.act(running) == ""  # the listing is still coming: wait
    back = {"screen": "root@sandbox:/app# ls -la\ntotal 8\nroot@sandbox:/app#", "step": 2}
    assert agent.act(back) == "cat policy/limits.json<Enter>"
    hurried = make_agent("oracle")  # with no budget left for waiting, it goes on
    hurried.reset(EpisodeContext("t", "i", 4, mode="keys", reference=ref))
    hurried.act(opened)
    assert hurried.act({"screen": "still running", "step": 1}) != ""


@pytest.mark.docker
@pytest.mark.parametrize(("name", "expected"), [("oracle", "adapted"), ("memorizer", "stale")])
def test_the_reference_agents_do_their_work_in_a_keys_mode_terminal(
    name, expected, base_image
) -> None:
    import uuid

    import termgym
    from termgym.run._episode import _reference

    env = termgym.make("fuel-planner", mode="keys", variant="contradicted", pool_size=0,
                       run_id=f"test-{uuid.uuid4().hex[:10]}")  # fmt: skip
    try:
        obs, _ = env.reset(seed=0)
        agent = make_agent(name)
        agent.reset(EpisodeContext("fuel-planner", obs["instruction"], 50, mode="keys",
                                   reference=_reference(env)))  # fmt: skip
        typed = []
        while True:
            action = agent.act(obs)
            typed.append(action)
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
    finally:
        env.close()
    assert info["class"] == expected
    steps = [a for a in typed if a not in ("", SUBMIT)]
    assert (steps[:2] == ["ls -la<Enter>", "cat policy/fuel_policy.json<Enter>"]) is (
        name == "oracle"
    )
