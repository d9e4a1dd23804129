"""Every vector mode stacks the infos of steps that mix a command, a submit and a command that
timed out, in either order: each key keeps one type across envs and steps (an int exit code
with `exited` beside it, never None), and close() returns."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

import termgym

pytestmark = pytest.mark.bwrap
TASK = str(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cargo-limit")
CMD, SLOW, SUBMIT = "cat policy.txt", "sleep 30", termgym.SUBMIT
STEPS = [
    (CMD, SUBMIT),  # a command's int exit code before a submit's none
    (CMD, CMD),  # both live again (next-step autoreset resets env 1 here)
    (SUBMIT, CMD),  # the other order
    (CMD, CMD),
    (SLOW, SUBMIT),  # a command that timed out (no exit code) before a submit
    (CMD, CMD),
    (SUBMIT, SLOW),
    (CMD, CMD),
]
"""The actions of each step, one pair per step: every mix in both orders, each with both
envs live (the step after an end resets under next-step autoreset)."""


class _Seen(gym.Wrapper):
    """Keeps every info its env returned (in this process: SyncVectorEnv's envs)."""

    def __init__(self, env: gym.Env, seen: list[dict[str, Any]]) -> None:
        super().__init__(env)
        self.seen = seen

    def reset(self, **kwargs: Any) -> Any:
        obs, info = self.env.reset(**kwargs)
        self.seen.append(info)
        return obs, info

    def step(self, action: Any) -> Any:
        result = self.env.step(action)
        self.seen.append(result[4])
        return result


class _Factory:
    def __init__(self, run_id: str, seen: list[dict[str, Any]] | None = None) -> None:
        self.run_id, self.seen = run_id, seen

    def __call__(self) -> gym.Env:
        env = termgym.make(
            TASK, backend="bwrap", run_id=self.run_id, pool_size=0, shadow=False,
            step_timeout=1.0, max_steps=10,
        )  # fmt: skip
        return env if self.seen is None else _Seen(env, self.seen)


def _drive(vec: Any, mode: AutoresetMode) -> list[dict[str, Any]]:
    """Step `vec` through STEPS (resetting what ended as the mode asks); the stacked infos."""
    stacked = []
    _, info = vec.reset(seed=1)
    stacked.append(info)
    for actions in STEPS:
        _, _, term, trunc, info = vec.step(np.array(actions, dtype=object))
        stacked.append(info)
        ended = term | trunc
        if mode == AutoresetMode.DISABLED and ended.any():
            _, info = vec.reset(options={"reset_mask": ended})
            stacked.append(info)
    return stacked


def _types(info: dict[str, Any], into: dict[str, set[str]], prefix: str = "") -> None:
    for key, value in info.items():
        if key in ("final_obs", "final_info") or key.startswith("_"):
            if key == "final_info":
                _types(value, into, prefix + "final_info.")
            continue
        if isinstance(value, dict):
            into[prefix + key].add("dict")
            _types(value, into, f"{prefix}{key}.")
        else:
            into[prefix + key].add(type(value).__name__)


def _assert_one_type_per_key(infos: list[dict[str, Any]]) -> None:
    seen: dict[str, set[str]] = defaultdict(set)
    for info in infos:
        _types(info, seen)
    for name in ("exit_code", "exited", "timed_out", "duration", "verdicts", "tamper"):
        assert name in seen, f"no info had {name}: {sorted(seen)}"
    mixed = {
        key: sorted(kinds)
        for key, kinds in seen.items()
        if len(kinds) > 1
        and kinds != {"str", "NoneType"}  # text: a str, or None
        and not key.startswith("rules_enforced.")  # the task's own values
    }
    assert not mixed, f"keys of more than one type across envs and steps: {mixed}"


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
def test_a_sync_vector_env_stacks_every_mix_with_one_type_per_key(base_rootfs, run_id, mode):
    seen: list[dict[str, Any]] = []
    vec = SyncVectorEnv([_Factory(run_id, seen)] * 2, autoreset_mode=mode)
    try:
        stacked = _drive(vec, mode)
    finally:
        vec.close()
    _assert_one_type_per_key(seen)
    timed_out = [i for i in seen if i.get("timed_out")]
    assert len(timed_out) == 2 and all(
        i["exit_code"] == -1 and i["exited"] is False for i in timed_out
    )
    ran = [i for i in seen if i.get("exited")]
    assert ran and all(i["exit_code"] == 0 for i in ran)
    for info in stacked:
        if "_exit_code" in info:  # stacked as ints, whatever the order of the envs
            assert info["exit_code"].dtype.kind == "i" and info["exited"].dtype == np.bool_


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
def test_an_async_vector_env_stacks_every_mix_and_closes(base_rootfs, run_id, mode):
    vec = AsyncVectorEnv([_Factory(run_id)] * 2, autoreset_mode=mode, shared_memory=False)
    try:
        stacked = _drive(vec, mode)
    finally:
        started = time.monotonic()
        vec.close(timeout=120)
    assert time.monotonic() - started < 120 and vec.closed
    ended = [i.get("final_info", i) for i in stacked if "_verdicts" in i.get("final_info", i)]
    assert len(ended) == 4  # one ending step per mix
    for info in stacked:
        if "_exit_code" in info:
            assert info["exit_code"].dtype.kind == "i" and info["exited"].dtype == np.bool_
    for info in ended:
        verdict = info["verdicts"]["original"]
        assert verdict["passed"].dtype == np.bool_ and verdict["known"].dtype == np.bool_
