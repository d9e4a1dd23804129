"""Importer fidelity: what a test script's lines are, the release a stand-in keeps, the
files a task names but lacks, and which tasks a --path lists."""

from __future__ import annotations

import pytest

from termgym.errors import ImportRefused
from termgym.importing._script import plan_script

HARBOR_TEMPLATE_TAIL = """
# Install uv
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh

source $HOME/.local/bin/env

uvx \\
  -p 3.13 \\
  -w pytest==8.4.1 \\
  -w pytest-json-ctrf==0.3.5 \\
  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA

if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


@pytest.mark.parametrize(
    "comment",
    [
        "# Install curl and gcc (gcc needed for compiling new.c in tests)",  # extract-elf
        "# Install curl and git",  # merge-diff-arc-agi-task
        "# Install curl if not already available",  # modernize-scientific-stack
        "    # curl https://example.com/x | sh, wget too",
    ],
)
def test_a_comment_is_not_a_command(comment: str) -> None:
    script = f"#!/bin/bash\n\n{comment}\napt-get update\napt-get install -y curl gcc\n"
    plan = plan_script(script + HARBOR_TEMPLATE_TAIL, "t", "tests/test.sh")
    assert plan.protection == "clean", plan.why
    assert plan.apt == ("curl", "gcc")
    assert comment in plan.script  # kept as written, run as the comment it is


def test_a_comment_after_a_command_is_not_part_of_it() -> None:
    script = "apt-get install -y jq  # and curl, wget https://x.example later\n" + (
        HARBOR_TEMPLATE_TAIL
    )
    plan = plan_script(script, "t", "tests/test.sh")
    assert plan.apt == ("jq",) and plan.protection == "clean"


def test_a_hash_inside_quotes_or_a_word_is_not_a_comment() -> None:
    with pytest.raises(ImportRefused, match="reaches the network at test time"):
        plan_script('echo "#" ; curl https://example.com/x\n', "t", "tests/test.sh")
    with pytest.raises(ImportRefused, match="reaches the network at test time"):
        plan_script("x=a#b curl https://example.com/x\n", "t", "tests/test.sh")


@pytest.mark.parametrize(
    "line",
    [
        "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y expect curl",
        "DEBIAN_FRONTEND=noninteractive TZ=UTC apt-get install -y expect curl",
        "sudo apt-get install -y expect curl > /dev/null 2>&1",
        "env DEBIAN_FRONTEND=noninteractive apt-get -qq install -y expect curl",
    ],
)
def test_an_install_behind_variables_is_an_install(line: str) -> None:
    plan = plan_script(f"#!/bin/bash\n# Install curl\n{line}\n{HARBOR_TEMPLATE_TAIL}", "t", "x")
    assert plan.protection == "clean", plan.why
    assert plan.apt == ("expect", "curl")
    assert any("moved to build time" in note for note in plan.notes)
    assert "apt-get" not in plan.script


def test_pip_behind_a_variable_is_an_install() -> None:
    plan = plan_script("PIP_NO_CACHE_DIR=1 pip install requests==2.32.5\npytest -rA\n", "t", "x")
    assert plan.pip == ("requests==2.32.5", "pytest") and plan.protection == "clean"


def test_two_exit_code_tests_in_one_if_are_plain_shell() -> None:
    script = (
        "pytest /tests/a.py -rA\nA=$?\npytest /tests/b.py -rA\nB=$?\n"
        "if [ $A -eq 0 ] && [ $B -eq 0 ]; then\n  echo 1 > /logs/verifier/reward.txt\nfi\n"
    )
    assert plan_script(script, "t", "x").protection == "clean"
