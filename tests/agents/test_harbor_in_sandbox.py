"""Harbor's CLI agents inside the sandbox (Codex CLI on OpenAI's responses API, mini-swe-agent
on chat completions), installed once into a layer from the registries, talking to a scripted
endpoint only through termgym's gateway, on fuel-planner's contradicted and original
episodes: a script that reads the policy adapts, one that writes the remembered value goes
stale, every Harbor call is a step, and the model's words are the episode's transcript."""

from __future__ import annotations

import base64

import pytest

from termgym.recording import read_run
from termgym.report import load_run

from ..gateway.conftest import KEY, ModelServer, Turn
from ..gateway.conftest import model_server as model_server  # the scripted endpoint (fixture)
from .test_harbor_terminus import READING_PLANNER, REMEMBERED, REMEMBERING_PLANNER

WRITE = "echo {} | base64 -d > /app/plan.py"


def _codex_script(server: ModelServer, planner: str) -> None:
    write = WRITE.format(base64.b64encode(planner.encode()).decode())
    server.turns += [
        Turn("Reading the policy.", REMEMBERED,
             [("exec_command", {"cmd": "cat /app/policy/fuel_policy.json"})]),
        Turn("Writing the planner.", None, [("exec_command", {"cmd": write})]),
        Turn("Done."),
    ]  # fmt: skip


def _run(server: ModelServer, tmp_path, agent: str, model: str, backend: str, variant: str):
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
            agent_options={"model": model, "base_url": server.base_url, "api_key": KEY},
        )
    ).run()
    [result] = summary.results
    return result, out


def _check_episode(result, out, server: ModelServer, expected: str | None, variant: str) -> None:
    assert (result.status, result.episode_class) == ("ok", expected), result.error
    assert result.passed == (expected != "stale")
    assert not result.tampered
    [episode] = read_run(out).episodes
    assert len(episode.steps) >= 5 and all(s.exit_code is not None for s in episode.steps)
    # the endpoint's key reached the endpoint and never the sandbox or the recording
    assert all(s.headers.get("authorization") == f"Bearer {KEY}" for s in server.seen)
    assert not any(KEY in s.action or KEY in s.output for s in episode.steps)
    said = [e for e in episode.end.extra["transcript"] if e["role"] == "assistant"]
    assert REMEMBERED in (said[0].get("reasoning") or "") + said[0]["content"]
    assert any("fuel_policy.json" in e["content"] for e in said)
    if variant == "contradicted":
        run = load_run(out, resamples=0)
        assert [h for h in run.audit.hits if h.kind == "leak"]


@pytest.mark.docker
@pytest.mark.parametrize(
    ("planner", "variant", "expected"),
    [
        (READING_PLANNER, "contradicted", "adapted"),
        (REMEMBERING_PLANNER, "contradicted", "stale"),
        (READING_PLANNER, "original", None),
    ],
)
def test_codex_in_the_sandbox_on_docker(
    model_server, base_image, harbor_python, tmp_path, planner, variant, expected
):
    _codex_script(model_server, planner)
    result, out = _run(model_server, tmp_path, "codex", "openai/scripted", "docker", variant)
    _check_episode(result, out, model_server, expected, variant)
    assert {s.path.split("?")[0] for s in model_server.seen if s.method == "POST"} == {
        "/v1/responses"
    }


@pytest.mark.bwrap
@pytest.mark.docker
def test_codex_in_the_sandbox_on_bwrap(
    model_server, base_image, base_rootfs, harbor_python, tmp_path
):
    _codex_script(model_server, REMEMBERING_PLANNER)
    result, out = _run(model_server, tmp_path, "codex", "openai/scripted", "bwrap", "contradicted")
    _check_episode(result, out, model_server, "stale", "contradicted")


def _mini_script(server: ModelServer, planner: str) -> None:
    write = WRITE.format(base64.b64encode(planner.encode()).decode())
    server.turns += [
        Turn("Reading the policy.", REMEMBERED,
             [("bash", {"command": "cat /app/policy/fuel_policy.json"})]),
        Turn("Writing the planner.", None, [("bash", {"command": write})]),
        Turn("Done.", None, [("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"})]),
    ]  # fmt: skip


@pytest.mark.docker
@pytest.mark.parametrize(
    ("planner", "variant", "expected"),
    [
        (READING_PLANNER, "contradicted", "adapted"),
        (REMEMBERING_PLANNER, "contradicted", "stale"),
        (READING_PLANNER, "original", None),
    ],
)
def test_mini_swe_agent_in_the_sandbox_on_docker(
    model_server, base_image, harbor_python, tmp_path, planner, variant, expected
):
    _mini_script(model_server, planner)
    result, out = _run(
        model_server, tmp_path, "mini-swe-agent", "openai/scripted", "docker", variant
    )
    _check_episode(result, out, model_server, expected, variant)
    assert {s.path for s in model_server.seen if s.method == "POST"} == {"/v1/chat/completions"}


@pytest.mark.bwrap
@pytest.mark.docker
def test_mini_swe_agent_in_the_sandbox_on_bwrap(
    model_server, base_image, base_rootfs, harbor_python, tmp_path
):
    _mini_script(model_server, READING_PLANNER)
    result, out = _run(
        model_server, tmp_path, "mini-swe-agent", "openai/scripted", "bwrap", "contradicted"
    )
    _check_episode(result, out, model_server, "adapted", "contradicted")
