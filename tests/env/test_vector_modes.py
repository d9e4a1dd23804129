"""AsyncVectorEnv of termgym envs in every autoreset mode, started by fork and forkserver,
on docker and bwrap, after the parent itself used an env (so a forked worker inherits a
used engine client and pool): the same checks as RayVectorEnv's."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from gymnasium.vector import AsyncVectorEnv, AutoresetMode

import termgym
from tests.env.vector_checks import check_vector_env

TASK = str(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cargo-limit")


def _make(backend: str, run_id: str):  # module level: forkserver pickles it by reference
    return termgym.make(TASK, backend=backend, run_id=run_id, pool_size=1, shadow=False)


class _Factory:
    def __init__(self, backend: str, run_id: str) -> None:
        self.backend, self.run_id = backend, run_id

    def __call__(self):
        return _make(self.backend, self.run_id)


@pytest.mark.parametrize("mode", list(AutoresetMode))
@pytest.mark.parametrize("context", ["fork", "forkserver"])
def test_async_vector_env_passes_the_vector_checks(backend, context, mode, run_id) -> None:
    parent = _make(backend, run_id)  # the parent uses an env first, as an RL script does
    parent.reset(seed=0)
    parent.step("true")
    parent.close()
    started = time.monotonic()
    vec = AsyncVectorEnv(
        [_Factory(backend, run_id)] * 2, shared_memory=False, context=context, autoreset_mode=mode
    )
    try:
        check_vector_env(vec, mode)
    finally:
        vec.close()
    # a worker that read another's engine reply hung for the SDK's 120 s: far longer than the
    # whole check takes, even on a machine busy with other work
    assert time.monotonic() - started < 110
    if backend == "docker":
        from tests.env.test_cleanup import containers_of

        assert containers_of(run_id) == []


@pytest.mark.bwrap
def test_four_forked_bwrap_workers_starting_together_never_hang(base_rootfs, run_id) -> None:
    for _ in range(3):  # the crossed replies showed in 8 of 18 fresh starts
        parent = _make("bwrap", run_id)
        parent.reset(seed=0)
        parent.close()
        vec = AsyncVectorEnv([_Factory("bwrap", run_id)] * 4, shared_memory=False, context="fork")
        try:
            vec.reset_async(seed=0)
            vec.reset_wait(timeout=60)
            started = time.monotonic()
        finally:
            vec.close(timeout=120)
        assert time.monotonic() - started < 120  # closed, not hung


@pytest.mark.docker
def test_a_forked_child_makes_its_own_engine_client(docker_available) -> None:
    import multiprocessing

    from termgym.sandbox._engine import docker_client

    inherited = docker_client()

    def child(queue) -> None:
        queue.put(docker_client() is not inherited and docker_client() is docker_client())

    queue = multiprocessing.get_context("fork").Queue()
    process = multiprocessing.get_context("fork").Process(target=child, args=(queue,))
    process.start()
    assert queue.get(timeout=30) is True
    process.join(timeout=30)
