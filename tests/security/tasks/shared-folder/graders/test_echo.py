"""The agent's program is started once per input, each input written by the test into its
tmp_path (a folder shared with the agent's user) just before; every start happens before
the outputs are checked."""

import subprocess
import sys


def test_each_input_is_echoed(tmp_path, rules):
    outputs = []
    for index in range(40):
        data = tmp_path / f"input-{index}.txt"
        data.write_text(str(index))
        done = subprocess.run(
            [sys.executable, "/app/echo.py", str(data)], capture_output=True, text=True
        )
        outputs.append(done.stdout.split())
    assert outputs == [[str(index)] * rules["repeat"] for index in range(40)]
