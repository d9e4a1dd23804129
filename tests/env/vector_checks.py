"""The checks every termgym vector env passes (AsyncVectorEnv, SyncVectorEnv, RayVectorEnv):
spaces, each autoreset mode's semantics on a real task, call / get_attr / set_attr, close.

The task is examples/tasks/cargo-limit (a `file` grader: grading is cheap): env 0 writes
the right answer and submits, env 1 only reads, so rewards tell the envs apart.
"""

from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

import termgym

SOLVE = "echo 100 > answer"
READ = "cat policy.txt"


def _actions(*actions: str) -> np.ndarray:
    return np.array(actions, dtype=object)


def _in_space(vec: VectorEnv, obs: object) -> None:
    assert vec.observation_space.contains(obs), "a batched observation outside the space"


def check_vector_env(vec: VectorEnv, mode: AutoresetMode) -> None:
    """Run the checks on a 2-env vector of cargo-limit (original variant, fixed seed)."""
    assert vec.num_envs == 2
    assert vec.metadata["autoreset_mode"] == mode
    obs, info = vec.reset(seed=3)
    _in_space(vec, obs)
    assert obs["step"].tolist() == [0, 0] and obs["exit_code"].tolist() == [-1, -1]
    assert len(set(info["episode_id"])) == 2 and list(info["task_id"]) == ["cargo-limit"] * 2

    obs, reward, term, trunc, info = vec.step(_actions(SOLVE, READ))
    _in_space(vec, obs)
    assert obs["step"].tolist() == [1, 1] and "100" in obs["output"][1]
    assert reward.dtype == np.float64 and term.dtype == np.bool_ and not (term | trunc).any()

    obs, reward, term, trunc, info = vec.step(_actions(termgym.SUBMIT, READ))
    _in_space(vec, obs)
    assert term.tolist() == [True, False] and reward.tolist() == [1.0, 0.0]
    if mode == AutoresetMode.SAME_STEP:  # the reset observation now, the final one in info
        assert obs["step"].tolist() == [0, 2]
        assert info["_final_obs"].tolist() == [True, False]
        assert bool(info["final_info"]["verdicts"]["original"]["passed"][0])
        assert info["final_obs"][0]["step"] == 1  # <submit> is not a step
    else:
        assert obs["step"].tolist() == [1, 2]
        assert bool(info["verdicts"]["original"]["passed"][0])

    if mode == AutoresetMode.NEXT_STEP:  # env 0 resets on this step, its action ignored
        obs, reward, term, trunc, info = vec.step(_actions(SOLVE, READ))
        assert obs["step"].tolist() == [0, 3] and reward.tolist() == [0.0, 0.0]
        assert not (term | trunc).any() and info["_episode_id"].tolist() == [True, False]
    elif mode == AutoresetMode.DISABLED:  # the caller resets what ended
        obs, info = vec.reset(options={"reset_mask": np.array([True, False])})
        assert obs["step"].tolist() == [0, 2] and info["_episode_id"].tolist() == [True, False]
    _in_space(vec, obs)

    # env 1 reaches the task's 4-step limit: truncated, and graded all the same
    while True:
        obs, reward, term, trunc, info = vec.step(_actions(READ, READ))
        if trunc[1] or term[1]:
            break
    assert trunc[1] and not term[1]
    final = info["final_info"] if mode == AutoresetMode.SAME_STEP else info
    assert final["_verdicts"].tolist() == [False, True]
    assert not final["verdicts"]["original"]["passed"][1]

    assert vec.get_attr("task_id") == ("cargo-limit", "cargo-limit")
    assert vec.call("render") == (None, None)
    vec.set_attr("render_mode", "ansi")
    screens = vec.call("render")
    assert all(isinstance(s, str) for s in screens)
    vec.close()
    assert vec.closed
    vec.close()  # twice is fine
