"""The agent's program is given a file of the grader folder as an argument: it must still
run as the agent's user (so it cannot read that file, nor see the rules)."""

import subprocess
from pathlib import Path

IDS = Path(__file__).with_name("ids.txt")


def test_the_program_counts_the_batches(rules):
    done = subprocess.run(["python3", "/app/count.py", str(IDS)], capture_output=True, text=True)
    count = len(IDS.read_text().split())
    assert done.stdout.strip() == str(-(-count // rules["limit"]))
