"""termgym in verifiers, through verifiers' own loops: vf-eval (v1 API, verifiers 0.4) and
vf.load_environment + env.evaluate (classic API, verifiers 0.2/0.3), whichever is installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

vf = pytest.importorskip("verifiers")

from .conftest import ScriptedServer, text_honest_then_submit  # noqa: E402

CLASSIC = hasattr(vf, "MultiTurnEnv")
pytestmark = pytest.mark.bwrap


@pytest.mark.skipif(CLASSIC, reason="verifiers' v1 API (0.4) is not the one installed")
def test_vf_eval_runs_episodes_of_the_termgym_taskset_and_records_classes(
    cargo: str, tmp_path: Path
) -> None:
    server = ScriptedServer(text_honest_then_submit)
    bin_dir = str(Path(sys.executable).parent)  # vf-eval, and uv for the harness program
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "OPENAI_API_KEY": "unused"}
    try:
        result = subprocess.run(
            [f"{bin_dir}/vf-eval", "termgym_verifiers",
             "--env.taskset.tasks", cargo, "--env.taskset.variants", "original,contradicted",
             "--env.taskset.backend", "bwrap", "--env.taskset.record-dir", str(tmp_path / "run"),
             "--env.taskset.weak-isolation", "withhold",  # a clean verifier's verdicts pay
             "--model", "scripted", "--client.base-url", server.base_url, "--no-rich"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        server.stop()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (traces_file,) = tmp_path.glob("outputs/*/traces.jsonl")
    episodes = [json.loads(line) for line in traces_file.read_text().splitlines()]
    traces = {e["traces"][0]["info"]["termgym"]["variant"]: e["traces"][0] for e in episodes}
    assert set(traces) == {"original", "contradicted"}
    for trace in traces.values():
        assert trace["rewards"]["termgym"]["score"] == 1.0
    assert traces["contradicted"]["metrics"]["adapted"] == 1.0
    assert traces["contradicted"]["info"]["termgym"]["class"] == "adapted"
    assert traces["original"]["metrics"]["passed_original"] == 1.0
    # the model saw the instruction, was offered no tools and never the variant
    first = server.requests[0]
    assert "tools" not in first or not first["tools"]
    assert any("The loading desk" in str(m.get("content")) for m in first["messages"])
    assert not any("contradicted" in str(r["messages"]) for r in server.requests)
    assert not any("bash tool" in str(r["messages"]) for r in server.requests)
    assert len(list((tmp_path / "run" / "episodes").glob("*.jsonl"))) == 2


@pytest.mark.skipif(CLASSIC, reason="verifiers' v1 API (0.4) is not the one installed")
def test_every_rollout_records_an_episode_of_its_own_run_after_run(
    cargo: str, tmp_path: Path
) -> None:
    """Two rollouts of one task (`-r 2`, a trainer's group) collided in one record_dir
    (`expected a new episode id`), and a second evaluation into it failed every episode:
    the episode id was the task's. Each rollout records an episode of its own now."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "OPENAI_API_KEY": "unused"}
    for run in (1, 2):
        (tmp_path / f"eval{run}").mkdir()
        server = ScriptedServer(text_honest_then_submit)
        try:
            result = subprocess.run(
                [f"{bin_dir}/vf-eval", "termgym_verifiers", "-r", "2",
                 "--env.taskset.tasks", cargo, "--env.taskset.backend", "bwrap",
                 "--env.taskset.record-dir", str(tmp_path / "run"),
                 "--model", "scripted", "--client.base-url", server.base_url, "--no-rich"],
                cwd=tmp_path / f"eval{run}", env=env, capture_output=True, text=True,
                timeout=600,
            )  # fmt: skip
        finally:
            server.stop()
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    from termgym.recording import read_run

    episodes = read_run(tmp_path / "run").episodes
    assert len(episodes) == 4 and len({e.episode_id for e in episodes}) == 4
    assert all(e.end is not None and e.end.error is None for e in episodes)


@pytest.mark.skipif(not CLASSIC, reason="verifiers' classic API (0.2, 0.3) is not installed")
def test_vf_evaluate_runs_tool_call_episodes_and_logs_classes(
    cargo: str, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    from verifiers.types import ClientConfig

    monkeypatch.setenv("TERMGYM_TEST_KEY", "unused")
    monkeypatch.chdir(tmp_path)  # verifiers may write outputs/ under the working directory
    env = vf.load_environment(
        "termgym.adapters.verifiers", tasks=[cargo], variants=["original", "contradicted"],
        env_options={"backend": "bwrap", "record_dir": str(tmp_path / "run")},
    )  # fmt: skip
    assert isinstance(env, vf.MultiTurnEnv)
    client = ClientConfig(
        api_base_url=scripted_server.base_url, api_key_var="TERMGYM_TEST_KEY", max_retries=0
    )
    results = asyncio.run(
        env.evaluate(client=client, model="scripted", on_progress=lambda *a, **k: None)
    )
    outputs = {o["info"]["variant"]: o for o in results["outputs"]}
    assert outputs["original"]["reward"] == 1.0 and outputs["contradicted"]["reward"] == 1.0
    assert outputs["contradicted"]["metrics"]["adapted"] == 1.0
    assert outputs["original"]["metrics"]["passed_original"] == 1.0
    assert all(o["stop_condition"] == "has_final_env_response" for o in outputs.values())
    # the model was offered the tools and saw the instruction, never the variant
    first = scripted_server.requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["bash", "submit", "report_conflict"]
    assert "The loading desk" in first["messages"][-1]["content"]
    assert not any("contradicted" in str(r["messages"]) for r in scripted_server.requests)
    assert len(list((tmp_path / "run" / "episodes").glob("*.jsonl"))) == 2


@pytest.mark.skipif(CLASSIC, reason="verifiers' v1 API (0.4) is not the one installed")
def test_a_taskset_asked_for_a_variant_no_task_offers_says_so() -> None:
    """`--env.taskset.variants contradictd` gave a taskset of no episode at all, evaluated
    without a word; a variant no task offers now names each task's variants."""
    from termgym.adapters import _verifiers_v1

    def load(**config: object) -> list:
        taskset = _verifiers_v1.TermgymTaskset(_verifiers_v1.TermgymTasksetConfig(**config))
        return list(taskset.load())

    with pytest.raises(ValueError, match=r"found 'contradictd'. Did you mean 'contradicted'\?"):
        load(tasks="fuel-planner", variants="contradictd")
    with pytest.raises(
        ValueError, match=r"offers the variant\(s\) \['impossible'\]; .*fuel-planner"
    ):
        load(tasks="fuel-planner", variants="original,impossible")
    assert len(load(tasks="fuel-planner", variants="original,contradicted", episodes=2)) == 4
