"""The oracle's one command, run through a real Docker sandbox's persistent shell."""

from __future__ import annotations

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
def sandbox(base_image):
    from termgym.sandbox import SandboxConfig, make_sandbox

    box = make_sandbox("docker", SandboxConfig(image=base_image, workdir="/app"))
    box.start()
    yield box
    box.close()


@pytest.mark.docker
@pytest.mark.parametrize("mode", ["command", "keys"])
def test_oracle_command_runs_in_the_sandbox_shell(sandbox, mode):
    ref = Reference(SCRIPT, "", withheld_rules={"max_weight": 150}, workdir="/app")
    agent = make_agent("oracle")
    agent.reset(EpisodeContext("t", "i", 5, mode=mode, reference=ref))
    action = agent.act({})
    sandbox.run("rm -rf /app/out", timeout=10)
    if mode == "keys":
        sandbox.send_keys(_keys_bytes(action), settle=1.0)
    else:
        result = sandbox.run(action, timeout=30)
        assert result.exit_code == 0, result.output
    check = sandbox.run("cat /app/out/limit.txt /app/out/policy.txt; pwd", timeout=10)
    assert check.output.split("\n")[:3] == ["150", "quoted $HOME stays `literal`", "/app"]
    assert agent.act({}) == SUBMIT
    # the shell is still usable afterwards: the script did not eat its input
    assert sandbox.run("echo still-here", timeout=10).output.strip() == "still-here"


def _keys_bytes(action: str) -> bytes:
    # The two key names as_keystrokes writes, decoded as the keys notation defines them.
    assert set(action.replace("<lt>", "").replace("<Enter>", "")) & set("<") == set()
    return action.replace("<Enter>", "\r").replace("<lt>", "<").encode()
