"""Environment speed during training: wrapped env steps and episodes per second, per backend."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from termgym.bench import Row, Section, timings_row

# The experiment's task (examples/tasks/cargo-limit): a file grader, four steps at most.
TASK = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cargo-limit"
COMMANDS = ("cat policy.txt", "echo 100 > answer", "echo 150 > answer", "echo 200 > answer")
MIX = {"original": 1.0, "contradicted": 1.0, "sampled": 1.0}


def _factory(backend: str, shadow: bool) -> Any:
    from termgym.env import DiscreteCommands, HashedText, make

    def make_env() -> Any:
        env = make(str(TASK), variant=MIX, backend=backend, max_steps=4, shadow=shadow)
        return DiscreteCommands(HashedText(env, dim=64), COMMANDS)

    return make_env


def _uniform_policy_run(
    backend: str, envs: int, episodes: int, shadow: bool = False
) -> tuple[Row, Row, str]:
    """A uniform random policy (early training) drives a vector env with same-step autoreset."""
    from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

    fns = [_factory(backend, shadow) for _ in range(envs)]
    cls = SyncVectorEnv if envs == 1 else AsyncVectorEnv
    vec = cls(fns, autoreset_mode=AutoresetMode.SAME_STEP)
    rng = np.random.default_rng(0)
    mid: list[float] = []
    ending: list[float] = []
    ended = steps = 0
    try:
        vec.reset(seed=0)
        vec.step(np.zeros(envs, dtype=int))  # warm the pool and the workers
        began = time.perf_counter()
        while ended < episodes:
            actions = rng.integers(0, len(COMMANDS) + 1, size=envs)
            tick = time.perf_counter()
            _, _, terminated, truncated, _ = vec.step(actions)
            spent = time.perf_counter() - tick
            done = int((terminated | truncated).sum())
            (ending if done else mid).append(spent)
            ended += done
            steps += envs
        elapsed = time.perf_counter() - began
    finally:
        vec.close()
    name = f"{backend}, {envs} env{'s' if envs > 1 else ''}"
    note = (
        f"{name}{', shadow graded' if shadow else ''}: {steps / elapsed:.1f} env steps/s, "
        f"{ended / elapsed:.2f} episodes/s ({steps} steps, {ended} episodes, {elapsed:.1f} s)"
    )
    return (
        timings_row(f"vector step, no episode ends ({name})", mid or [0.0]),
        timings_row(f"vector step ending an episode: grading + reset ({name})", ending or [0.0]),
        note,
    )


def _hashing(n: int) -> Row:
    """HashedText's cost alone, on a screenful of text."""
    import gymnasium as gym

    from termgym.env import HashedText, TerminalText

    class Shape(gym.Env[dict[str, Any], str]):
        observation_space = gym.spaces.Dict(
            {
                "output": TerminalText(10_000),
                "screen": TerminalText(10_000),
                "step": gym.spaces.Discrete(5),
            }
        )
        action_space = TerminalText(100)

    wrapper = HashedText(Shape(), dim=64)
    text = "\n".join(f"$ echo line {i} > answer\nmax_weight: {100 + i}" for i in range(20))
    obs = {"output": text, "screen": text, "exit_code": 0, "step": 1}
    spent = []
    for _ in range(n):
        began = time.perf_counter()
        wrapper.observation(obs)
        spent.append(time.perf_counter() - began)
    return timings_row("HashedText on a 40-line screen and output", spent)


def bench_training(quick: bool = False) -> Section:
    """The training section of `python -m termgym.bench`."""
    from termgym.images import docker_answers
    from termgym.sandbox import bwrap_works

    episodes = 20 if quick else 60
    rows: list[Row] = [_hashing(200 if quick else 2000)]
    notes: list[str] = []
    runs = []
    if bwrap_works():
        runs += [("bwrap", 1, False), ("bwrap", 2, False), ("bwrap", 1, True)]
    if docker_answers():
        runs += [("docker", 1, False)]
    for backend, envs, shadow in runs:
        step_row, end_row, note = _uniform_policy_run(backend, envs, episodes, shadow)
        if not shadow:
            rows += [step_row, end_row]
        notes.append(note)
    if not runs:
        notes.append("skipped: neither bubblewrap nor a Docker engine is available")
    notes.append(
        "policy: uniform over 4 commands and submit (early training), at most 4 steps, "
        "variants original/contradicted/sampled mixed; task examples/tasks/cargo-limit"
    )
    return Section(
        name="training",
        title="Training: wrapped env steps per second",
        rows=tuple(rows),
        notes=tuple(notes),
    )
