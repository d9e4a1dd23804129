"""The concurrent paths never hang: threads of episodes on bwrap and docker, a rollout at
concurrency 8, eight async envs on one loop and `termgym run --concurrency 4`, each under a
hard deadline that fails the test (and names what was stuck) instead of hanging it.

Each deadline is many times what the work takes on a loaded machine: only a thread that
never returns can reach it. CI runs a few rounds (well under a minute per backend);
TERMGYM_STRESS_ROUNDS=50 runs fifty rounds of threads per backend instead.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

import termgym
from termgym.env import TerminalEnv
from termgym.report import load_run
from termgym.run import Trajectory

CARGO = str(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cargo-limit")
"""A task that grades one file check: the shortest real episode."""

ORACLE = "sed -n 's/^max_weight: *//p' /app/policy.txt > /app/answer"

STRESS = {"bwrap": (4, 4, 3), "docker": (4, 2, 2)}
"""Per backend: threads, episodes per thread, rounds (a fresh set of threads each)."""
ROUNDS = int(os.environ.get("TERMGYM_STRESS_ROUNDS", "0"))
"""Rounds per backend instead of STRESS's (0: STRESS's)."""

DEADLINE = 240.0
"""Seconds a round (or one of the other paths) may take before it counts as stuck."""


def _episodes(backend: str, count: int) -> None:
    """`count` back-to-back episodes of one env of this thread's own, each graded 1.0."""
    env = termgym.make(CARGO, backend=backend, shadow=False)
    try:
        for seed in range(count):
            env.reset(seed=seed)
            env.step(ORACLE)
            _, reward, terminated, _, info = env.step(termgym.SUBMIT)
            assert terminated and reward == 1.0, info
    finally:
        env.close()


def _all_within(deadline: float, jobs: list[Callable[[], object]]) -> None:
    """Run each job on a daemon thread of its own; fail, naming where each stuck thread
    waits, if any has not returned within `deadline` seconds; re-raise the first error."""
    errors: list[BaseException] = []

    def run(job: Callable[[], object]) -> None:
        try:
            job()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(job,), daemon=True) for job in jobs]
    for thread in threads:
        thread.start()
    end = time.monotonic() + deadline
    for thread in threads:
        thread.join(timeout=max(0.0, end - time.monotonic()))
    stuck = [thread for thread in threads if thread.is_alive()]
    if stuck:
        frames = sys._current_frames()
        where = "\n".join(
            "".join(traceback.format_stack(frames[t.ident])) for t in stuck if t.ident in frames
        )
        pytest.fail(f"{len(stuck)} of {len(threads)} threads stuck after {deadline:g} s:\n{where}")
    if errors:
        raise errors[0]


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("bwrap", marks=pytest.mark.bwrap),
        pytest.param("docker", marks=pytest.mark.docker),
    ],
)
def test_threads_of_episodes_all_return(backend: str, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("base_rootfs" if backend == "bwrap" else "base_image")
    threads, episodes, rounds = STRESS[backend]
    for _ in range(ROUNDS or rounds):
        _all_within(DEADLINE, [lambda: _episodes(backend, episodes)] * threads)


@pytest.mark.bwrap
def test_a_rollout_at_concurrency_8_returns_every_episode(base_rootfs: str) -> None:
    def policy(messages: list[dict], tools: list[dict]) -> str:
        done = any(m["role"] == "assistant" for m in messages)
        return "SUBMIT" if done else f"```bash\n{ORACLE}\n```"

    found: list[Trajectory] = []
    _all_within(
        DEADLINE,
        [lambda: found.extend(termgym.rollout(policy, [CARGO], episodes=8, concurrency=8,
                                              backend="bwrap", shadow=False))],
    )  # fmt: skip
    assert len(found) == 8 and {t.reward for t in found} == {1.0}, found


@pytest.mark.bwrap
def test_eight_async_envs_on_one_loop_all_return(base_rootfs: str) -> None:
    async def episode(env: TerminalEnv, seed: int) -> float:
        await env.areset(seed=seed)
        await env.astep(ORACLE)
        _, reward, *_ = await env.astep(termgym.SUBMIT)
        return float(reward)

    async def main() -> list[float]:
        envs = [termgym.make(CARGO, backend="bwrap", shadow=False) for _ in range(8)]
        try:
            return await asyncio.gather(*(episode(env, i) for i, env in enumerate(envs)))
        finally:
            for env in envs:
                env.close()

    rewards: list[float] = []
    _all_within(DEADLINE, [lambda: rewards.extend(asyncio.run(main()))])
    assert rewards == [1.0] * 8


@pytest.mark.bwrap
def test_termgym_run_at_concurrency_4_finishes(base_rootfs: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [
        str(Path(sys.executable).with_name("termgym")), "run", "--agent", "oracle", "--path", CARGO,
        "--tasks", "cargo-limit",
        "--variants", "original,contradicted", "--episodes", "4", "--concurrency", "4",
        "--backend", "bwrap", "--out", str(out), "--no-report",
    ]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=DEADLINE)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"`termgym run --concurrency 4` did not finish in {DEADLINE:g} s: {exc}")
    assert done.returncode == 0, done.stderr[-3000:]
    summaries = load_run(out).summaries
    assert len(summaries) == 8 and {s.reward for s in summaries} == {1.0}
