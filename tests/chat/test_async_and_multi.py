"""The async env API and the multi-task environment, on real bwrap sandboxes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import termgym
from termgym.env import MultiTaskEnv, TaskSchedule, resolve_task_set
from termgym.errors import TaskNotFound

from .conftest import CARGO, READ_LIMIT

TINY = str(Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "tiny-limit")


@pytest.mark.bwrap
def test_astep_runs_off_the_loop_and_matches_step(cargo: str, run_id: str) -> None:
    """The command waits for a file the event loop writes after 20 ticks of its own: it can
    only end (and astep return) if the loop kept running while astep waited on it."""

    async def main() -> tuple[int, tuple, list[BaseException | None]]:
        env = termgym.make(cargo, variant="contradicted", backend="bwrap", run_id=run_id)
        try:
            await env.areset(seed=5)
            assert env.episode is not None
            signal = env.episode.sandbox.host_path("/tmp/loop-ticked")  # type: ignore[attr-defined]
            stop = asyncio.Event()
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while not stop.is_set():
                    await asyncio.sleep(0.01)
                    ticks += 1
                    if ticks == 20:
                        signal.write_text("20\n")

            tick = asyncio.create_task(ticker())
            slow = await env.astep("until [ -s /tmp/loop-ticked ]; do sleep 0.05; done; echo done")
            stop.set()
            await tick
            # The first call's command waits for a file the test writes only once the second
            # call has been refused, so the two overlap on any machine, however slow.
            release = env.episode.sandbox.host_path("/tmp/second-refused")  # type: ignore[attr-defined]
            first = asyncio.create_task(
                env.astep("until [ -s /tmp/second-refused ]; do sleep 0.02; done")
            )
            await asyncio.sleep(0)  # the first call is under way (its flag is set before it awaits)
            second = asyncio.create_task(env.astep("true"))
            await asyncio.wait([second])
            release.write_text("1\n")
            await asyncio.wait([first])
            errors = [task.exception() for task in (first, second)]
            await env.astep(READ_LIMIT)
            final = await env.astep(termgym.SUBMIT)
            return ticks, (slow[0]["output"], final[1], final[4]["class"]), errors
        finally:
            await env.aclose()

    ticks, (output, reward, episode_class), errors = asyncio.run(main())
    assert output.strip() == "done" and ticks >= 20  # the loop ticked while the command ran
    refused = [e for e in errors if e is not None]
    assert len(refused) == 1 and isinstance(refused[0], RuntimeError)
    assert "one call at a time" in str(refused[0])
    assert (reward, episode_class) == (1.0, "adapted")


def test_task_sets_resolve_globs_lists_and_folders() -> None:
    assert [t.id for t in resolve_task_set([CARGO, "fuel-*"])] == ["cargo-limit", "fuel-planner"]
    assert {t.id for t in resolve_task_set(str(Path(CARGO).parent))} >= {"cargo-limit"}
    with pytest.raises(TaskNotFound, match=r"no task matches 'nothing-\*'"):
        resolve_task_set("nothing-*")
    with pytest.raises(TaskNotFound, match="holds none"):
        resolve_task_set(str(Path(__file__).parent))


def test_task_schedules_draw_cycle_and_validate() -> None:
    import numpy as np

    ids = ["a", "b", "c"]
    cycle = TaskSchedule.coerce("cycle", ids)
    assert [cycle.draw(np.random.default_rng(0), i) for i in range(4)] == ["a", "b", "c", "a"]
    stages = TaskSchedule.coerce([{"episodes": 2, "mix": "b"}, {"mix": {"c": 1}}], ids)
    assert [stages.draw(np.random.default_rng(0), i) for i in range(3)] == ["b", "b", "c"]
    with pytest.raises(ValueError, match="'d' is not in the task set"):
        TaskSchedule.coerce({"d": 1}, ids)
    with pytest.raises(ValueError, match="expected 'episodes'"):
        TaskSchedule.coerce([{"mix": "a"}, {"mix": "b"}], ids)
    with pytest.raises(ValueError, match="weights add up to 0"):
        TaskSchedule.coerce({"a": 0}, ids)


def test_a_schedule_variant_a_task_does_not_offer_is_refused() -> None:
    with pytest.raises(ValueError, match="does not offer the variant"):
        MultiTaskEnv([CARGO], variant="swapped", backend="bwrap")


@pytest.mark.bwrap
def test_the_multi_task_env_draws_tasks_passes_check_env_and_is_registered(
    cargo: str, run_id: str
) -> None:
    env = gym.make(
        "termgym/multi-v0", tasks=[cargo, TINY], task_schedule="cycle",
        variant={"original": 1, "contradicted": 1}, backend="bwrap", run_id=run_id,
    )  # fmt: skip
    try:
        multi = env.unwrapped
        assert isinstance(multi, MultiTaskEnv)
        assert (
            multi.observation_space["step"].n
            == max(t.spec.limits.max_steps for t in multi.tasks) + 1
        )
        seen = []
        for seed in range(4):
            obs, info = env.reset(seed=seed)
            seen.append(info["task_id"])
            assert multi.observation_space.contains(obs)
            _, reward, terminated, _, info = env.step(termgym.SUBMIT)
            assert terminated and info["variant"] in ("original", "contradicted")
        assert seen == ["cargo-limit", "tiny-limit", "cargo-limit", "tiny-limit"]
        obs, info = multi.reset(seed=0, options={"task": "cargo-limit", "variant": "contradicted"})
        multi.step(READ_LIMIT)
        _, reward, *_, info = multi.step(termgym.SUBMIT)
        assert (reward, info["class"], info["task_id"]) == (1.0, "adapted", "cargo-limit")
        with pytest.raises(ValueError, match="unknown reset option"):
            multi.reset(options={"tsak": "x"})
    finally:
        env.close()
    solo = MultiTaskEnv([cargo], backend="bwrap", run_id=run_id, max_steps=3)
    try:
        check_env(solo, skip_render_check=True)
    finally:
        solo.close()
