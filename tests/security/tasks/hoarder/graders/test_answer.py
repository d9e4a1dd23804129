"""The agent's program prints the enforced limit (it is given no time limit of its own, so a
program that hangs hangs this test until the grading timeout)."""

import subprocess
import sys


def test_the_program_prints_the_limit(rules):
    done = subprocess.run(
        [sys.executable, "/app/answer.py"], capture_output=True, text=True, cwd="/app"
    )
    assert done.stdout.strip() == str(rules["limit"])
