"""The oracle's actions, whole or in steps, run through a real Docker sandbox's persistent shell."""

from __future__ import annotations

import re
import time

import pytest

from termgym.agents import SUBMIT, EpisodeContext, Reference, make_agent

SCRIPT = """set -e
mkdir -p out
python3 - <<'PY'
import json, os
rules = json.loads(os.environ["TERMGYM_WITHHELD_RULES"])
open("out/limit.txt", "w").write(str(rules.get("max_weight", "none")) + "\\n")
PY
cat > out/policy.txt <<'TERMGYM_SCRIPT'
quoted $HOME stays `literal`
TERMGYM_SCRIPT
"""


@pytest.fixture(scope="module")
def sandboxes(base_image):
    """A command-mode sandbox and a keys-mode one (its shell a person's terminal)."""
    from termgym.sandbox import SandboxConfig, make_sandbox

    boxes = {
        mode: make_sandbox(
            "docker", SandboxConfig(image=base_image, workdir="/app", interactive=mode == "keys")
        )
        for mode in ("command", "keys")
    }
    for box in boxes.values():
        box.start()
    yield boxes
    for box in boxes.values():
        box.close()


MARKED = """#!/usr/bin/env bash
set -euo pipefail
# step: make the folder
mkdir -p out && cd out
# step: write the limit the rules told (a tab, a `!` and a heredoc on the way)
python3 - <<'PY'
import json, os
rules = json.loads(os.environ["TERMGYM_WITHHELD_RULES"])
open("limit.txt", "w").write(str(rules.get("max_weight", "none")) + "\\n")
PY
printf 'quoted $HOME stays `literal`\\t!\\n' > policy.txt
cd ..
"""


@pytest.mark.docker
@pytest.mark.parametrize("mode", ["command", "keys"])
@pytest.mark.parametrize("script", [SCRIPT, MARKED], ids=["whole", "in-steps"])
def test_oracle_actions_run_in_the_sandbox_shell(sandboxes, mode, script):
    sandbox = sandboxes[mode]
    ref = Reference(script, "", withheld_rules={"max_weight": 150}, workdir="/app")
    agent = make_agent("oracle")
    agent.reset(EpisodeContext("t", "i", 5, mode=mode, reference=ref))
    sandbox.run("rm -rf /app/out", timeout=60)
    actions = []
    while (action := agent.act({"screen": "root@sandbox:/app#"})) != SUBMIT:  # each step done
        actions.append(action)
        if mode == "keys":
            _type_until_the_prompt(sandbox, _keys_bytes(action))
        else:
            result = sandbox.run(action, timeout=30)
            assert result.exit_code == 0, result.output
    assert actions[0] in ("ls -la", "ls -la<Enter>")
    assert len(actions) == (2 if script is SCRIPT else 3)
    check = sandbox.run("cat /app/out/limit.txt /app/out/policy.txt; pwd", timeout=60)
    assert check.output.split("\n")[:2] == [
        "150",
        "quoted $HOME stays `literal`" + ("\t!" if script is MARKED else ""),
    ]
    assert check.output.split("\n")[2] == "/app"
    # the shell is still usable afterwards: the script did not eat its input
    assert sandbox.run("echo still-here", timeout=60).output.strip() == "still-here"


def _type_until_the_prompt(sandbox, keys: bytes, patience: float = 60.0) -> bytes:  # noqa: ANN001
    """Type `keys`, then read until the shell's prompt ends what it printed: the step is done
    (a quiet second, which a busy machine's python3 can take to start, is not the end)."""
    shown = sandbox.send_keys(keys, settle=0.3).raw
    deadline = time.monotonic() + patience
    while not re.search(rb"root@sandbox:[^\s#]*# $", shown) and time.monotonic() < deadline:
        shown += sandbox.send_keys(b"", settle=0.3).raw
    return shown


def _keys_bytes(action: str) -> bytes:
    # The two key names as_keystrokes writes, decoded as the keys notation defines them.
    assert set(action.replace("<lt>", "").replace("<Enter>", "")) & set("<") == set()
    return action.replace("<Enter>", "\r").replace("<lt>", "<").encode()
