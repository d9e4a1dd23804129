"""The sandbox pool: a configuration it ran out of gets a deeper warm reserve (real bwrap)."""

from __future__ import annotations

import time

import pytest

from termgym.env._pool import SandboxPool
from termgym.sandbox import SandboxConfig, make_sandbox


def _wait_ready(pool: SandboxPool, config: SandboxConfig, count: int) -> None:
    deadline = time.monotonic() + 60
    while pool.ready(config) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.ready(config) >= count


@pytest.mark.bwrap
def test_a_configuration_taken_two_at_a_time_gets_two_warm_from_then_on(base_rootfs: str) -> None:
    pool = SandboxPool(lambda c: make_sandbox("bwrap", c), size=1)
    config = SandboxConfig(memory_mb=256)
    taken = []
    try:
        pool.prefill(config)
        _wait_ready(pool, config, 1)
        taken += [pool.acquire(config), pool.acquire(config)]  # as a shadow grading does
        assert pool.stats.warm == 1 and pool.stats.cold == 1
        assert pool.depth(config) == 2
        _wait_ready(pool, config, 2)
        taken += [pool.acquire(config), pool.acquire(config)]
        assert pool.stats.warm == 3 and pool.stats.cold == 1
        assert all(box.run("echo ok").output.strip() == "ok" for box in taken)
    finally:
        for box in taken:
            pool.release(box)
        pool.close()


@pytest.mark.bwrap
def test_the_reserve_deepens_no_further_than_its_bound_and_not_at_all_without_a_pool(
    base_rootfs: str,
) -> None:
    pool = SandboxPool(lambda c: make_sandbox("bwrap", c), size=1)
    off = SandboxPool(lambda c: make_sandbox("bwrap", c), size=0)
    config = SandboxConfig(memory_mb=256)
    taken = []
    try:
        for _ in range(12):  # acquires back to back drain it, again and again
            taken.append(pool.acquire(config))
        assert 2 <= pool.depth(config) <= 1 + SandboxPool.EXTRA
        taken.append(off.acquire(config))
        assert off.depth(config) == 0 and off.ready(config) == 0
    finally:
        for box in taken:
            box.close()
        pool.close()
        off.close()
