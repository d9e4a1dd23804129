"""Harbor's CLI agents inside the sandbox (Codex CLI on OpenAI's responses API, mini-swe-agent
on chat completions, Claude Code on Anthropic's messages API), installed once into a layer
from the registries, talking to a scripted endpoint only through termgym's gateway, on
fuel-planner's contradicted and original episodes: a script that reads the policy adapts,
one that writes the remembered value goes stale, every Harbor call is a step, every command
the agent ran in its own process is a step it reported, and the model's words are the
episode's transcript.

CI runs Codex on docker and on bwrap; the other agents and combinations are marked
`agents` (`make test-agents` builds their layers and runs them; `make test` leaves them out).
"""

from __future__ import annotations

import base64

import pytest

from termgym.recording import read_run
from termgym.report import load_run

from ..gateway.conftest import KEY, ModelServer, Turn
from ..gateway.conftest import model_server as model_server  # the scripted endpoint (fixture)
from .test_harbor_terminus import READING_PLANNER, REMEMBERED, REMEMBERING_PLANNER

WRITE = "echo {} | base64 -d > /app/plan.py"
READ = "cat /app/policy/fuel_policy.json"


def _write(planner: str) -> str:
    return WRITE.format(base64.b64encode(planner.encode()).decode())


def _codex(server: ModelServer, planner: str) -> None:
    server.turns += [
        Turn("Reading the policy.", REMEMBERED, [("exec_command", {"cmd": READ})]),
        Turn("Writing the planner.", None, [("exec_command", {"cmd": _write(planner)})]),
        Turn("Done."),
    ]


def _mini(server: ModelServer, planner: str) -> None:
    server.turns += [
        Turn("Reading the policy.", REMEMBERED, [("bash", {"command": READ})]),
        Turn("Writing the planner.", None, [("bash", {"command": _write(planner)})]),
        Turn("Done.", None, [("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"})]),
    ]


def _claude(server: ModelServer, planner: str) -> None:
    server.side_text = "no"  # Claude Code's own side calls (titles, checks) are not scripted
    server.turns += [
        Turn("Reading the policy.", REMEMBERED,
             [("Bash", {"command": READ, "description": "Read the policy"})]),
        Turn("Writing the planner.", None,
             [("Bash", {"command": _write(planner), "description": "Write the planner"})]),
        Turn("Done."),
    ]  # fmt: skip


AGENTS = {
    # agent: (Harbor's model name, script, the API it speaks, the program of its run step)
    "codex": ("openai/scripted", _codex, "/v1/responses", "codex exec"),
    "mini-swe-agent": ("openai/scripted", _mini, "/v1/chat/completions", "mini-swe-agent --yolo"),
    "claude-code": ("anthropic/scripted", _claude, "/v1/messages", "claude --verbose"),
}


def _run(server: ModelServer, tmp_path, agent: str, backend: str, variant: str):
    from termgym.run import RunConfig, Runner

    out = tmp_path / f"{agent}-{backend}-{variant}"
    summary = Runner(
        RunConfig(
            agent=f"harbor:{agent}",
            tasks=("fuel-planner",),
            variants=(variant,),
            out=out,
            concurrency=1,
            backend=backend,
            retries=0,
            agent_options={"model": AGENTS[agent][0], "base_url": server.base_url, "api_key": KEY},
        )
    ).run()
    [result] = summary.results
    return result, out


def _episode(
    server: ModelServer, tmp_path, agent: str, backend: str, variant: str, planner: str,
    expected: str | None,
) -> None:  # fmt: skip
    """Run one episode of `agent` with its script of `planner`, and check it end to end."""
    _, script, api, program = AGENTS[agent]
    script(server, planner)
    result, out = _run(server, tmp_path, agent, backend, variant)
    assert (result.status, result.episode_class) == ("ok", expected), result.error
    assert result.passed == (expected != "stale")
    assert not result.tampered
    [episode] = read_run(out).episodes
    assert len(episode.steps) >= 5 and all(s.exit_code is not None for s in episode.steps)
    # the endpoint's key reached the endpoint and never the sandbox or the recording
    assert all(s.headers.get("authorization", s.headers.get("x-api-key")) in (
        f"Bearer {KEY}", KEY) for s in server.seen)  # fmt: skip
    assert not any(KEY in s.action or KEY in s.output for s in episode.steps)
    assert {s.path.split("?")[0] for s in server.seen if s.method == "POST"} <= {
        api,
        api + "/count_tokens",
    }
    # the model's words, as the gateway recorded them, are the transcript the audit reads
    said = [e for e in episode.end.extra["transcript"] if e["role"] == "assistant"]
    spoken = [e for e in said if "Reading the policy." in e["content"]]
    assert spoken and REMEMBERED in (spoken[0].get("reasoning") or "") + spoken[0]["content"]
    assert any("fuel_policy.json" in e["content"] for e in said)
    if variant == "contradicted":
        run = load_run(out, resamples=0)
        assert [h for h in run.audit.hits if h.kind == "leak"]
    # every command the agent ran in its own process is a step it reported, inside the step
    # of termgym's that ran the agent, with what it printed (here: the drawn policy)
    [inside] = [i for i, s in enumerate(episode.steps) if program in s.action]
    reported = {s.action: s for s in episode.reported}
    assert READ in reported and _write(planner) in reported, list(reported)
    read = reported[READ]
    assert (read.source, read.within, read.mode) == ("agent", inside, "command")
    assert f'"max_weight": {episode.header.rules_visible["max_weight"]}' in read.output
    assert read.exit_code in (0, None)
    log = episode.end.extra["agent_log"]
    assert log["producer"].startswith(f"harbor:{agent} ") and log["format"] == "atif"
    assert log["reported_steps"] == len(episode.reported) and log["trajectory"]["steps"]


# ---- CI: an in-sandbox agent on docker and on bwrap ---------------------------------------


@pytest.mark.docker
def test_codex_on_docker_reads_the_policy_and_adapts(model_server, base_image, harbor_python,
                                                     tmp_path):  # fmt: skip
    _episode(model_server, tmp_path, "codex", "docker", "contradicted", READING_PLANNER, "adapted")


@pytest.mark.bwrap
@pytest.mark.docker
def test_codex_on_bwrap_remembers_and_goes_stale(model_server, base_image, base_rootfs,
                                                 harbor_python, tmp_path):  # fmt: skip
    _episode(model_server, tmp_path, "codex", "bwrap", "contradicted", REMEMBERING_PLANNER, "stale")


# ---- make test-agents: the other agents and combinations ----------------------------------

CASES = [
    ("codex", "docker", "original", READING_PLANNER, None),
    ("mini-swe-agent", "docker", "contradicted", READING_PLANNER, "adapted"),
    ("mini-swe-agent", "docker", "contradicted", REMEMBERING_PLANNER, "stale"),
    ("mini-swe-agent", "docker", "original", READING_PLANNER, None),
    ("mini-swe-agent", "bwrap", "contradicted", READING_PLANNER, "adapted"),
    ("claude-code", "docker", "contradicted", READING_PLANNER, "adapted"),
    ("claude-code", "docker", "contradicted", REMEMBERING_PLANNER, "stale"),
    ("claude-code", "docker", "original", READING_PLANNER, None),
    ("claude-code", "bwrap", "contradicted", REMEMBERING_PLANNER, "stale"),
]


@pytest.mark.agents
@pytest.mark.docker
@pytest.mark.parametrize(
    ("agent", "backend", "variant", "planner", "expected"),
    [
        pytest.param(*case, marks=[pytest.mark.bwrap] if case[1] == "bwrap" else [],
                     id=f"{case[0]}-{case[1]}-{case[2]}-{case[4] or 'passed'}")
        for case in CASES
    ],
)  # fmt: skip
def test_an_agent_in_the_sandbox_runs_whole_episodes(
    model_server, base_image, harbor_python, tmp_path, request, agent, backend, variant,
    planner, expected,
):  # fmt: skip
    if backend == "bwrap":
        request.getfixturevalue("base_rootfs")
    _episode(model_server, tmp_path, agent, backend, variant, planner, expected)
