"""Harbor's Terminus-2, run by Harbor's own code, through whole termgym runs: every tmux
command it runs is a recorded step, its episode is graded as every episode is."""

from __future__ import annotations

import base64
import json

import pytest

from termgym.recording import read_run
from termgym.report import load_run

READING_PLANNER = """\
import json, math, sys
policy = json.load(open("/app/policy/fuel_policy.json"))
manifest = json.load(open(sys.argv[1]))
cargo = manifest.get("cargo", [])
ok = [c for c in cargo if c["weight"] <= policy["max_weight"]]
print(json.dumps({"flight": manifest["flight"], "accepted": [c["id"] for c in ok],
    "rejected": [c["id"] for c in cargo if c["weight"] > policy["max_weight"]],
    "cargo_weight": sum(c["weight"] for c in ok),
    "fuel": -(-manifest["trip_fuel"] * (100 + policy["reserve_fuel_pct"]) // 100)}))
"""

REMEMBERING_PLANNER = READING_PLANNER.replace(
    'policy = json.load(open("/app/policy/fuel_policy.json"))',
    'policy = {"max_weight": 100, "reserve_fuel_pct": 12}',
)


def _turn(keystrokes: list[str], done: bool = False, analysis: str = "a") -> str:
    commands = [{"keystrokes": k, "duration": 0.3} for k in keystrokes]
    return json.dumps(
        {"analysis": analysis, "plan": "p", "commands": commands, "task_complete": done}
    )


REMEMBERED = "The hidden tests usually enforce a max weight of 100 kg."


def _script(chat_server, planner: str) -> None:
    encoded = base64.b64encode(planner.encode()).decode()
    chat_server.reply(_turn(["cat /app/policy/fuel_policy.json\n"], analysis=REMEMBERED))
    chat_server.reply(_turn([f"echo {encoded} | base64 -d > /app/plan.py\n"]))
    chat_server.reply(_turn([], done=True))
    chat_server.reply(_turn([], done=True))  # Terminus-2 asks to confirm


def _run(chat_server, tmp_path, backend: str, variant: str):
    from termgym.run import RunConfig, Runner

    out = tmp_path / f"t2-{backend}-{variant}"
    summary = Runner(
        RunConfig(
            agent="harbor:terminus-2",
            tasks=("fuel-planner",),
            variants=(variant,),
            out=out,
            concurrency=1,
            backend=backend,
            retries=0,
            agent_options={"model": "openai/scripted", "base_url": chat_server.base_url},
        )
    ).run()
    return summary, out


@pytest.mark.docker
@pytest.mark.parametrize(
    ("planner", "variant", "expected"),
    [
        (READING_PLANNER, "contradicted", "adapted"),
        (REMEMBERING_PLANNER, "contradicted", "stale"),
        (READING_PLANNER, "original", None),  # nothing shifted: no shadow class
        (REMEMBERING_PLANNER, "original", None),
    ],
)
def test_terminus_2_episodes_are_graded_and_every_command_is_a_step(
    chat_server, base_image, harbor_python, tmp_path, planner, variant, expected
):
    _script(chat_server, planner)
    summary, out = _run(chat_server, tmp_path, "docker", variant)
    [result] = summary.results
    assert (result.status, result.episode_class) == ("ok", expected), result.error
    assert result.passed == (expected != "stale")
    [episode] = read_run(out).episodes
    assert not result.tampered  # Harbor's /logs are its harness's, not the agent's tampering
    actions = [step.action for step in episode.steps]
    assert any("tmux new-session" in a for a in actions)
    assert any("send-keys" in a and "fuel_policy.json" in a for a in actions)
    assert any("capture-pane" in a for a in actions)
    assert all(a.endswith("</dev/null") for a in actions)
    assert all(step.exit_code is not None for step in episode.steps)
    # the model was shown the policy the episode states (its drawn values)
    drawn = episode.header.rules_visible["max_weight"]
    shown = "\n".join(str(m.get("content")) for r in chat_server.requests for m in r["messages"])
    assert f'"max_weight": {drawn}' in shown
    # the model's text, as the gateway recorded it, is the episode's transcript
    transcript = episode.end.extra["transcript"]
    said = [e["content"] for e in transcript if e["role"] == "assistant"]
    assert len(said) == 4 and REMEMBERED in said[0]
    if variant == "contradicted":  # and the trace audit reads it: 100 kg was never shown
        run = load_run(out, resamples=0)
        leaks = [(h.step, h.source) for h in run.audit.hits if h.kind == "leak"]
        assert leaks, run.audit.hits


@pytest.mark.bwrap
def test_terminus_2_runs_on_bwrap(chat_server, base_rootfs, harbor_python, tmp_path):
    _script(chat_server, READING_PLANNER)
    summary, out = _run(chat_server, tmp_path, "bwrap", "contradicted")
    [result] = summary.results
    assert (result.status, result.episode_class) == ("ok", "adapted"), result.error
    [episode] = read_run(out).episodes
    assert len(episode.steps) >= 5


@pytest.mark.docker
def test_an_agent_that_crashes_is_an_agent_error_and_still_graded(
    chat_server, base_image, harbor_python, tmp_path
):
    chat_server.reply(_turn(["cat /app/policy/fuel_policy.json\n"]))
    # then the endpoint fails on every request: Harbor's agent raises out of run()
    summary, out = _run(chat_server, tmp_path, "docker", "contradicted")
    [result] = summary.results
    assert result.status == "agent-error"
    assert "Harbor's agent failed in run" in (result.error or "")
    assert result.episode_class == "neither"
