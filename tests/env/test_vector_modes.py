"""AsyncVectorEnv of termgym envs in every autoreset mode, started by fork and forkserver,
on docker and bwrap, after the parent itself used an env (so a forked worker inherits a
used engine client and pool): the same checks as RayVectorEnv's; and with its defaults,
text through shared memory."""

from __future__ import annotations

import copy
import pickle
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
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

    from termgym.images._engine import docker_client

    inherited = docker_client()

    def child(queue) -> None:
        queue.put(docker_client() is not inherited and docker_client() is docker_client())

    queue = multiprocessing.get_context("fork").Queue()
    process = multiprocessing.get_context("fork").Process(target=child, args=(queue,))
    process.start()
    assert queue.get(timeout=30) is True
    process.join(timeout=30)


UNICODE_AND_LONG = (
    "python3 -c \"print('é中✓\\U0001F600 ' * 300000)\"",  # past the output limit: cut by termgym
    "printf 'naïve café\\n\\t tab and \\\\ backslash\\n'",
)


@pytest.mark.parametrize("context", ["fork", "forkserver"])
def test_async_vector_env_with_its_default_shared_memory_passes_the_checks(
    backend, context, run_id
) -> None:
    vec = AsyncVectorEnv([_Factory(backend, run_id)] * 2, context=context)
    try:
        assert vec.shared_memory
        check_vector_env(vec, AutoresetMode.NEXT_STEP)
    finally:
        vec.close()


@pytest.mark.bwrap
def test_text_through_shared_memory_is_exactly_the_text_without_it(base_rootfs, run_id) -> None:
    """Every observation of real episodes, non-ASCII and over a megabyte included, equals the
    one AsyncVectorEnv passes by pipe."""
    termgym.register_tasks(TASK)
    shared = gym.make_vec("termgym/cargo-limit-v0", num_envs=2, vectorization_mode="async",
                          backend="bwrap", run_id=run_id, pool_size=0, shadow=False)  # fmt: skip
    piped = gym.make_vec("termgym/cargo-limit-v0", num_envs=2, vectorization_mode="async",
                         vector_kwargs={"shared_memory": False}, backend="bwrap", run_id=run_id,
                         pool_size=0, shadow=False)  # fmt: skip
    try:
        assert shared.unwrapped.shared_memory and not piped.unwrapped.shared_memory
        seen = [vec.reset(seed=5)[0] for vec in (shared, piped)]
        assert data_equivalence(seen[0], seen[1], exact=True)
        outputs = []
        steps = (UNICODE_AND_LONG, ("echo 100 > answer", "true"), (termgym.SUBMIT,) * 2)
        for actions in (*steps, UNICODE_AND_LONG):  # the last one is autoreset's
            batch = np.array(actions, dtype=object)
            one, two = shared.step(batch), piped.step(batch)
            assert data_equivalence(one[:4], two[:4], exact=True)  # the infos name episodes
            assert shared.observation_space.contains(one[0])
            outputs.append(one[0]["output"])
        assert one[1].tolist() == [0.0, 0.0] and outputs[-1] == ("", "")
        long, short = outputs[0]
        assert long.startswith("é中✓😀 é") and "bytes truncated by termgym" in long
        assert len(long.encode()) > 1_000_000 and short == "naïve café\n\t tab and \\ backslash\n"
    finally:
        shared.close()
        piped.close()


def test_a_view_of_shared_text_follows_the_memory() -> None:
    from gymnasium.vector.utils import shared_memory

    from termgym.env import TerminalText

    space = TerminalText(10)
    memory = shared_memory.create_shared_memory(space, n=2)
    view = shared_memory.read_from_shared_memory(space, memory, n=2)
    shared_memory.write_to_shared_memory(space, 0, "é\udcff✓", memory)
    shared_memory.write_to_shared_memory(space, 1, "x" * 10, memory)
    assert tuple(view) == ("é\udcff✓", "x" * 10) and view[-1] == "x" * 10
    copied = copy.deepcopy(view)
    shared_memory.write_to_shared_memory(space, 0, "", memory)
    assert copied == ("é\udcff✓", "x" * 10) and view[0] == ""
    assert pickle.loads(pickle.dumps(view)) == ("", "x" * 10)
    with pytest.raises(ValueError, match="at most 10 code points"):
        shared_memory.write_to_shared_memory(space, 0, "y" * 11, memory)
