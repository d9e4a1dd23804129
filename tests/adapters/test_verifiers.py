"""termgym in verifiers: loaded by vf.load_environment, run by its own evaluate loop."""

from __future__ import annotations

import asyncio

import pytest

vf = pytest.importorskip("verifiers")

from verifiers.types import ClientConfig  # noqa: E402

from .conftest import ScriptedServer  # noqa: E402

pytestmark = pytest.mark.bwrap


def test_vf_evaluate_runs_tool_call_episodes_and_logs_classes(
    cargo: str, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
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
    assert [t["function"]["name"] for t in first["tools"]] == ["bash", "submit"]
    assert "The loading desk" in first["messages"][-1]["content"]
    assert not any("contradicted" in str(r["messages"]) for r in scripted_server.requests)
    assert len(list((tmp_path / "run" / "episodes").glob("*.jsonl"))) == 2
