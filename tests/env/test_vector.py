"""Vector envs with autoreset, RecordEpisodeStatistics, and variant schedules inside them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import RecordEpisodeStatistics

import termgym
from tests.env.conftest import oracle_command

pytestmark = pytest.mark.docker

TASKS = ["fuel-planner", "text-report"]


def _factory(task: str, run_id: str, **kwargs):
    def make():
        return termgym.make(task, run_id=run_id, pool_size=1, **kwargs)

    return make


def _drive(vec, actions_per_env: list[list[str]], steps: int):
    """Step each env through its action cycle; return per-step rewards and done flags."""
    rewards, dones = [], []
    cursor = [0] * vec.num_envs
    for _ in range(steps):
        batch = []
        for i in range(vec.num_envs):
            batch.append(actions_per_env[i][cursor[i] % len(actions_per_env[i])])
            cursor[i] += 1
        obs, reward, terminated, truncated, info = vec.step(np.array(batch, dtype=object))
        rewards.append(reward.copy())
        dones.append(terminated | truncated)
    return np.array(rewards), np.array(dones), obs, info


@pytest.mark.parametrize("vector_cls", [SyncVectorEnv, AsyncVectorEnv])
def test_vector_env_of_real_tasks_runs_through_autoresets(vector_cls, base_image, run_id) -> None:
    from termgym.env._pool import shared_pool

    shared_pool("docker", 1)  # a pool in the parent before the fork: workers must not reuse it
    fns = [_factory(task, run_id) for task in TASKS]
    kwargs = {"shared_memory": False} if vector_cls is AsyncVectorEnv else {}
    vec = vector_cls(fns, autoreset_mode=AutoresetMode.NEXT_STEP, **kwargs)
    try:
        obs, info = vec.reset(seed=7)
        assert len(obs["instruction"]) == 2 and "fuel" in obs["instruction"][0].lower()
        cycle = [[oracle_command(task), termgym.SUBMIT, "true"] for task in TASKS]
        rewards, dones, obs, info = _drive(vec, cycle, steps=6)
        # each env: solve, submit (reward 1, done), autoreset step; twice over
        assert dones[:, 0].tolist() == [False, True, False, False, True, False]
        assert rewards[1].tolist() == [1.0, 1.0] and rewards[4].tolist() == [1.0, 1.0]
        assert rewards.sum() == 4.0
    finally:
        vec.close()
    if vector_cls is AsyncVectorEnv:  # worker processes took their pools' containers along
        from tests.env.test_cleanup import containers_of

        assert containers_of(run_id) == []


def test_record_episode_statistics_sees_the_final_reward(base_image, run_id) -> None:
    env = RecordEpisodeStatistics(termgym.make("text-report", run_id=run_id, pool_size=0))
    try:
        env.reset(seed=1)
        env.step(oracle_command("text-report"))
        *_, info = env.step(termgym.SUBMIT)
        assert info["episode"]["r"] == 1.0 and info["episode"]["l"] == 2
    finally:
        env.close()


def test_a_variant_schedule_applies_under_autoreset_without_options(base_image, run_id) -> None:
    schedule = {"original": 0.5, "contradicted": 0.5}
    fns = [_factory("text-report", run_id, variant=schedule, shadow=False) for _ in range(2)]
    vec = SyncVectorEnv(fns, autoreset_mode=AutoresetMode.NEXT_STEP)
    seen = []
    try:
        vec.reset(seed=11)
        for _ in range(8):
            _, _, terminated, _, info = vec.step(np.array([termgym.SUBMIT] * 2, dtype=object))
            if terminated.any():
                seen += [v for v, done in zip(info["variant"], terminated, strict=True) if done]
            vec.step(np.array(["true"] * 2, dtype=object))  # the autoreset step
    finally:
        vec.close()
    assert set(seen) == {"original", "contradicted"}, seen


def test_gymnasium_make_vec_builds_termgym_envs(base_image, run_id) -> None:
    vec = gym.make_vec(
        "termgym/text-report-v0",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.NEXT_STEP},
        run_id=run_id,
        pool_size=0,
    )
    try:
        obs, _ = vec.reset(seed=0)
        assert len(obs["output"]) == 2
    finally:
        vec.close()
