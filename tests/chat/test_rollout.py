"""termgym.rollout: policies over tasks and variants, trajectories, recordings reports read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import termgym
from termgym.errors import RecordingError
from termgym.report import load_run
from termgym.run import Trajectory, load_trajectories

from .conftest import READ_LIMIT, bash_call

pytestmark = pytest.mark.bwrap


def honest(messages: list[dict], tools: list[dict]) -> dict | str:
    """Reads the limit from the policy file, then submits."""
    assert [t["function"]["name"] for t in tools] == ["bash", "submit", "report_conflict"]
    turns = sum(m["role"] == "assistant" for m in messages)
    return bash_call(READ_LIMIT) if turns == 0 else "SUBMIT"


def test_a_sync_policy_rollout_records_a_run_that_reports_read(cargo: str, tmp_path: Path) -> None:
    out = tmp_path / "roll"
    trajectories = termgym.rollout(
        honest, [cargo], variants=["original", "contradicted", "withheld"],
        episodes=2, concurrency=3, backend="bwrap", record_dir=out,
    )  # fmt: skip
    assert [t.episode_id for t in trajectories] == [
        f"cargo-limit--{v}--{i:03d}"
        for v in ("original", "contradicted", "withheld")
        for i in (0, 1)
    ]
    by_variant = {t.variant: t for t in trajectories}
    assert (
        by_variant["contradicted"].episode_class == "adapted"
        and by_variant["contradicted"].reward == 1.0
    )
    assert (
        by_variant["withheld"].reward == 0.0 and by_variant["withheld"].metadata["passed"] is False
    )
    first = trajectories[0]
    assert first.actions == (READ_LIMIT, termgym.SUBMIT) and first.rewards == (0.0, 1.0)
    assert first.messages[0]["role"] == "system" and first.messages[2]["tool_calls"]
    assert Path(first.episode_file or "").is_file() and first.status == "ok"
    saved = {t.episode_id: t for t in load_trajectories(out / "trajectories.jsonl")}
    assert saved == {t.episode_id: t for t in trajectories}  # written as each one ended
    run = load_run(out)
    assert len(run.summaries) == 6 and list(run.metrics) == ["rollout"]
    assert {s.variant for s in run.summaries if s.episode_class == "adapted"} == {"contradicted"}
    with pytest.raises(
        ValueError, match=r"no task of the set offers the variant\(s\) \['swapped'\]"
    ):
        termgym.rollout(honest, [cargo], variants=["swapped"], backend="bwrap")


def test_an_async_policy_that_raises_is_a_graded_agent_error(cargo: str) -> None:
    async def flaky(messages: list[dict], tools: list[dict]) -> str:
        if any(
            m["role"] == "tool" or m["role"] == "user" and "Exit code" in str(m["content"])
            for m in messages
        ):
            raise ConnectionError("the inference server went away")
        await asyncio.sleep(0)
        return f"```bash\n{READ_LIMIT}\n```"

    async def main() -> list[Trajectory]:
        return await termgym.arollout(flaky, [cargo], variants=["original"], backend="bwrap")

    [trajectory] = asyncio.run(main())
    assert trajectory.status == "agent-error" and "went away" in (trajectory.error or "")
    assert trajectory.reward == 1.0 and trajectory.truncated  # graded as it stood
    with pytest.raises(RuntimeError, match="arollout"):
        asyncio.run(_rollout_inside_a_loop(cargo))


async def _rollout_inside_a_loop(cargo: str) -> None:
    termgym.rollout(lambda m, t: "SUBMIT", [cargo])


def test_trajectories_round_trip_and_bad_lines_are_named(tmp_path: Path) -> None:
    message = {"role": "user", "content": "x"}
    trajectory = Trajectory(
        "e", "t", "original", 1, messages=(message,), actions=("ls", None), rewards=(0.0, 1.0)
    )
    assert Trajectory.from_dict(trajectory.to_dict()) == trajectory
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"format": "termgym-trajectory/1", "episode_id": "e"}\n')
    with pytest.raises(RecordingError, match=r"t.jsonl:1: .*missing or mistyped"):
        load_trajectories(bad)
    bad.write_text('["not", "one"]\n')
    with pytest.raises(RecordingError, match="found 'list'"):
        load_trajectories(bad)


def test_a_policy_error_saves_as_agent_error_and_old_files_saying_policy_error_still_load(
    tmp_path: Path,
) -> None:
    failed = Trajectory("e", "t", "original", 1, status="agent-error", error="boom")
    assert failed.to_dict()["status"] == "agent-error"
    old = tmp_path / "old.jsonl"  # as trajectories were saved before one status vocabulary
    old.write_text(json.dumps({**failed.to_dict(), "status": "policy-error"}) + "\n")
    [loaded] = load_trajectories(old)
    assert loaded == failed and loaded.counted
    old.write_text(json.dumps({**failed.to_dict(), "status": "crashed"}) + "\n")
    with pytest.raises(RecordingError, match=r"old.jsonl:1: .*status: expected one of ok, "):
        load_trajectories(old)


@pytest.mark.parametrize(
    ("options", "error", "expected"),
    [
        ({"policy": 5}, TypeError, r"policy: expected a function policy\(messages, tools\)"),
        ({"variants": "contradicted"}, ValueError, r"expected a list of variant names, e\.g\."),
        ({"variants": ["contradictd"]}, ValueError, r"Did you mean 'contradicted'\?"),
        ({"retries": -1}, ValueError, r"retries: expected an int >= 0, got -1"),
    ],
)
def test_a_rollout_that_cannot_work_is_refused_before_any_episode(
    cargo: str, tmp_path: Path, options: dict, error: type, expected: str
) -> None:
    arguments = {"policy": honest, "variants": ["original"], "retries": 1} | options
    policy = arguments.pop("policy")
    out = tmp_path / "roll"
    with pytest.raises(error, match=expected):
        termgym.rollout(policy, [cargo], backend="bwrap", record_dir=out, **arguments)
    assert not out.exists()  # no episode recorded, none counted as an infrastructure error


def test_a_rollout_into_a_folder_holding_its_episodes_is_refused_before_run_json_changes(
    cargo: str, tmp_path: Path
) -> None:
    """The recorder refused the first episode, but only after run.json had been written over
    with the second rollout's header: the first rollout's was lost."""
    out = tmp_path / "roll"
    termgym.rollout(honest, [cargo], backend="bwrap", record_dir=out, seed=1)
    header = (out / "run.json").read_text()
    with pytest.raises(RecordingError, match=r"already holds episodes of this plan \(cargo-limit"):
        termgym.rollout(honest, [cargo], backend="bwrap", record_dir=out, seed=2)
    assert (out / "run.json").read_text() == header
