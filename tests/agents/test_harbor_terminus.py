"""Harbor's Terminus-2, run by Harbor's own code, through whole termgym runs: every tmux
command it runs is a recorded step, its episode is graded as every episode is."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

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


def _run(chat_server, tmp_path, backend: str, variant: str, agent_timeout: float | None = None):
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
            agent_timeout=agent_timeout,
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
    # Harbor's own trajectory of the run is kept with the episode; its commands were termgym's
    # steps already, so none is a step the agent reported
    log = episode.end.extra["agent_log"]
    assert log["producer"].startswith("harbor:terminus-2 ") and log["trajectory"]["steps"]
    assert log["reported_steps"] == 0 and not episode.reported
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
    for _ in range(6):  # then the endpoint refuses the key: Harbor's agent raises out of run()
        chat_server.reply(status=401)  # (at once: litellm retries a 5xx with 4-15 s waits)
    summary, out = _run(chat_server, tmp_path, "docker", "contradicted")
    [result] = summary.results
    assert result.status == "agent-error"
    assert "Harbor's agent failed in run" in (result.error or "")
    assert result.episode_class == "neither"


def _processes_marked(marker: str) -> list[int]:
    """The processes whose environment holds `marker` (this test's Harbor processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.docker
def test_the_time_limit_ends_a_harbor_agent_at_once_and_its_episode_is_graded(
    chat_server, base_image, harbor_python, tmp_path, monkeypatch
):
    """Terminus-2 waits on its model (every call after the first fails with a 500, which
    litellm retries after 4 to 15 s), or on Harbor's start on a busy machine: at the agent's
    deadline its process and its route end at once, the episode is graded as it stands, and
    nothing of the agent outlives it."""
    marker = f"termgym-harbor-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("TERMGYM_TEST_MARK", marker)  # Harbor's process inherits it
    chat_server.reply(_turn(["cat /app/policy/fuel_policy.json\n"]))
    limit = 8.0
    summary, out = _run(chat_server, tmp_path, "docker", "contradicted", agent_timeout=limit)
    from termgym.agents.harbor import spare_processes

    idle = {spare.proc.pid for spare in spare_processes()}  # started for a next agent
    assert set(_processes_marked(marker)) <= idle  # not one left for the garbage collector
    [result] = summary.results
    assert (result.status, result.agent_timed_out, result.error) == ("ok", True, None)
    assert result.episode_class == "neither"  # graded: no planner was written
    # ended at the deadline: not after litellm's retries, nor after the agent's 900 s wait
    assert limit <= result.phases["agent"] < limit + 10, result.phases
    [episode] = read_run(out).episodes
    assert episode.end is not None and episode.end.truncated and not episode.end.terminated
