"""A real run as ATIF: exported (by `termgym run --atif` and by `termgym export atif`),
validated by termgym's models, by the `atif` package's and by Harbor's own validator where
installed, imported back with `termgym import atif`, and replayed into the same result.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from termgym.cli import main
from termgym.recording import read_run, validate_atif
from termgym.run import RunConfig, Runner

TASKS = str(Path(__file__).resolve().parents[2] / "examples" / "tasks")
READ_LIMIT = "sed -n 's/^max_weight: *//p' policy.txt > answer"
PROBE_ANSWER = "I wrote the limit policy.txt states."


def _run(out: Path, agent: str, variants: tuple[str, ...], **options) -> list:
    config = RunConfig(
        agent=agent, tasks=("cargo-limit",), variants=variants, out=out, concurrency=1,
        backend="bwrap", paths=(TASKS,), agent_options=options, atif=agent == "llm",
    )  # fmt: skip
    summary = Runner(config).run()
    assert [r.status for r in summary.results] == ["ok"] * len(variants)
    return sorted(read_run(out).episodes, key=lambda e: e.header.variant)


def _validated_elsewhere(data: dict) -> None:
    """The published validators: the `atif` package's models, Harbor's TrajectoryValidator."""
    atif = pytest.importorskip("atif")
    atif.Trajectory.model_validate(data)
    try:
        from harbor.utils.trajectory_validator import TrajectoryValidator
    except ImportError:  # Harbor needs Python 3.12; checked where it is installed
        return
    validator = TrajectoryValidator()
    assert validator.validate(data), validator.errors


@pytest.mark.bwrap
def test_a_run_goes_to_atif_and_comes_back_replayable(chat_server, base_rootfs, tmp_path):
    calls = []
    for _ in range(2):
        calls.append(chat_server.call("bash", {"command": READ_LIMIT}))
        chat_server.call("submit")
        chat_server.reply(PROBE_ANSWER, reasoning="the policy file said so")
    out = tmp_path / "run"
    episodes = _run(
        out, "llm", ("original", "contradicted"), model="scripted", protocol="tools",
        base_url=chat_server.base_url, api_key="k", max_retries=0, probe=True,
    )  # fmt: skip
    # the run option wrote one trajectory per episode; the command writes the same
    written = sorted((out / "atif").glob("*.json"))
    assert [p.stem for p in written] == sorted(e.episode_id for e in episodes)
    result = CliRunner().invoke(main, ["export", "atif", str(out), "--out", str(tmp_path / "x")])
    assert result.exit_code == 0, result.output
    for path in written:
        assert (tmp_path / "x" / path.name).read_text() == path.read_text()

    contradicted = next(e for e in episodes if e.header.variant == "contradicted")
    data = json.loads((out / "atif" / f"{contradicted.episode_id}.json").read_text())
    validate_atif(data)
    _validated_elsewhere(data)
    ours = data["extra"]["termgym"]
    assert (ours["variant"], ours["seed"]) == ("contradicted", contradicted.header.seed)
    drawn = contradicted.header.rules_enforced["max_weight"]
    assert ours["rules_enforced"] == {"max_weight": drawn} == ours["rules_visible"]
    assert ours["episode_class"] == "adapted" and ours["reward"] == 1.0
    assert ours["verdicts"]["original"]["passed"] is False
    assert ours["verdicts"]["contradicted"]["passed"] is True
    sources = [
        (s["source"], s.get("tool_calls", [{}])[0].get("function_name")) for s in data["steps"]
    ]
    assert sources == [("system", None), ("user", None), ("agent", "bash"), ("agent", "submit"),
                       ("user", None), ("agent", None)]  # fmt: skip
    act = data["steps"][2]
    assert act["tool_calls"][0] == {
        "tool_call_id": calls[1], "function_name": "bash", "arguments": {"command": READ_LIMIT}
    }  # fmt: skip
    assert act["observation"]["results"][0]["source_call_id"] == calls[1]
    assert act["observation"]["results"][0]["extra"]["termgym"]["exit_code"] == 0
    assert act["metrics"] == {"prompt_tokens": 10, "completion_tokens": 5}
    assert data["steps"][1]["message"].startswith("Task:\nThe loading desk")
    assert data["steps"][-1]["message"] == PROBE_ANSWER
    assert data["steps"][-1]["reasoning_content"] == "the policy file said so"
    assert data["final_metrics"]["total_steps"] == 6

    back = tmp_path / "back"
    result = CliRunner().invoke(main, ["import", "atif", str(out / "atif"), "--out", str(back)])
    assert result.exit_code == 0, result.output
    imported = sorted(read_run(back).episodes, key=lambda e: e.header.variant)
    for before, after in zip(episodes, imported, strict=True):
        extra = {k: v for k, v in after.header.extra.items() if k != "imported_from"}
        header = dataclasses.replace(after.header, extra=extra, initial_output=b"")
        assert header == dataclasses.replace(before.header, initial_output=b"")
        assert [dataclasses.replace(s, raw=b"") for s in after.steps] == [
            dataclasses.replace(s, raw=b"") for s in before.steps
        ]
        assert after.end is not None and before.end is not None
        assert dataclasses.replace(after.end, ended=None) == dataclasses.replace(
            before.end, ended=None
        )

    # replayed: the imported episode's actions, run again, are graded the same
    replayed = _run(
        tmp_path / "replay", "replay", ("contradicted",),
        episode=str(back / "episodes" / f"{contradicted.episode_id}.jsonl"),
    )  # fmt: skip
    assert [s.action for s in replayed[0].steps] == [READ_LIMIT]
    assert replayed[0].header.rules_enforced == contradicted.header.rules_enforced
    assert (replayed[0].end.reward, replayed[0].end.episode_class) == (1.0, "adapted")
