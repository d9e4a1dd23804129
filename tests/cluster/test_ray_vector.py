"""RayVectorEnv on a real multi-node Ray cluster: the same vector checks as AsyncVectorEnv's
in every autoreset mode, sub-environments on both workers, a dead actor replaced."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import termgym
from termgym.vector import RayVectorEnv
from tests.cluster.conftest import EXAMPLE_TASKS
from tests.env.vector_checks import check_vector_env

TASK = f"{EXAMPLE_TASKS}/cargo-limit"


@pytest.mark.bwrap
@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_ray_vector_env_passes_the_vector_checks(ray_on, mode, base_rootfs, run_id) -> None:
    vec = RayVectorEnv(TASK, 2, autoreset_mode=mode, backend="bwrap", shadow=False, run_id=run_id)
    check_vector_env(vec, mode)


@pytest.mark.bwrap
def test_sub_environments_spread_over_the_workers_and_step_in_parallel(
    ray_on, base_rootfs, run_id
) -> None:
    import ray

    vec = RayVectorEnv(TASK, 4, backend="bwrap", run_id=run_id, shadow=False)
    try:
        placed = set(ray.get([actor.node_id.remote() for actor in vec.actors]))
        assert placed == ray_on.node_ids()  # four sandboxes: two on each worker
        vec.reset(seed=0)
        gate = _Gate(uuid.uuid4().hex[:12])
        gate.start()
        try:
            obs, *_ = vec.step(np.array([gate.command] * 4, dtype=object))
        finally:
            gate.stop()
        assert gate.most_waiting == 4  # all four commands ran at once, each waiting for the rest
        assert [out.strip() for out in obs["output"]] == ["met"] * 4
        assert obs["step"].tolist() == [1, 1, 1, 1]
    finally:
        vec.close()


class _Gate(threading.Thread):
    """A barrier for commands in separate bwrap sandboxes of this machine: each one says it
    waits (a file in its /tmp, seen from the host) and goes on once the gate opens, which it
    does when four wait at once. Steps run one after the other would never get there; after
    `patience` the gate lets each one through as it comes, so such a test fails, not hangs."""

    def __init__(self, token: str, count: int = 4, patience: float = 120.0) -> None:
        super().__init__(daemon=True)
        self.token, self.count, self.patience = token, count, patience
        self.command = (
            f"touch /tmp/{token}.waits; until [ -e /tmp/{token}.go ]; do sleep 0.05; done; echo met"
        )
        self.most_waiting = 0
        self._done = threading.Event()

    def run(self) -> None:
        from termgym.sandbox._bwrap import episodes_dir

        deadline = time.monotonic() + self.patience
        while not self._done.is_set():
            waiting = [
                marker
                for pattern in (
                    f"*/merged/tmp/{self.token}.waits",
                    f"*/binds/tmp/{self.token}.waits",
                )
                for marker in episodes_dir().glob(pattern)
                if not marker.with_suffix(".go").exists()
            ]
            self.most_waiting = max(self.most_waiting, len(waiting))
            if len(waiting) >= self.count or (waiting and time.monotonic() > deadline):
                for marker in waiting:
                    marker.with_suffix(".go").touch()
            time.sleep(0.05)

    def stop(self) -> None:
        self._done.set()
        self.join()


@pytest.mark.parametrize(
    ("backend", "mode"),
    [
        pytest.param("bwrap", AutoresetMode.NEXT_STEP, marks=pytest.mark.bwrap),
        pytest.param("bwrap", AutoresetMode.SAME_STEP, marks=pytest.mark.bwrap),
        pytest.param("docker", AutoresetMode.NEXT_STEP, marks=pytest.mark.docker),
    ],
)
def test_a_dead_actor_is_replaced_and_its_episode_ends_truncated(
    ray_on, backend, mode, request, run_id
) -> None:
    request.getfixturevalue("base_image" if backend == "docker" else "base_rootfs")
    vec = RayVectorEnv(TASK, 2, autoreset_mode=mode, backend=backend, run_id=run_id)
    try:
        vec.reset(seed=0)
        vec.step(np.array(["cat policy.txt"] * 2, dtype=object))
        os.kill(vec.ray.get(vec.actors[0].pid.remote()), signal.SIGKILL)
        obs, reward, term, trunc, info = vec.step(np.array(["true"] * 2, dtype=object))
        assert trunc.tolist() == [True, False] and not term.any() and reward.tolist() == [0, 0]
        lost = info["final_info"] if mode == AutoresetMode.SAME_STEP else info
        assert "ActorDiedError" in lost["actor_lost"][0] and vec.replaced == 1
        assert vec.observation_space.contains(obs)
        if mode == AutoresetMode.SAME_STEP:
            assert obs["step"].tolist() == [0, 2]  # the replacement's first episode
        else:
            obs, *_ = vec.step(np.array([termgym.SUBMIT, "true"], dtype=object))
            assert obs["step"].tolist() == [0, 3]  # the replacement resets on this step
        obs, *_ = vec.step(np.array(["cat policy.txt", "true"], dtype=object))
        assert "max_weight: " in obs["output"][0]  # the replacement runs the task
    finally:
        vec.close()
    if backend == "docker":  # the dead actor's container went too
        from tests.env.test_cleanup import containers_of

        assert containers_of(run_id) == []
