"""The sandbox pool: a configuration it ran out of gets a deeper warm reserve; a reservation
starts what it will take and no more (real bwrap)."""

from __future__ import annotations

import time

import pytest

from termgym.env._pool import SandboxPool
from termgym.sandbox import Sandbox, SandboxConfig, make_sandbox


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
        # the second found none warm: it took the start the first one began (or its own)
        assert pool.stats.warm == 1 and pool.stats.cold + pool.stats.waited == 1
        assert pool.depth(config) == 2
        _wait_ready(pool, config, 2)
        taken += [pool.acquire(config), pool.acquire(config)]
        assert pool.stats.warm == 3 and pool.stats.cold + pool.stats.waited == 1
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


def _wait_started(pool: SandboxPool, config: SandboxConfig) -> None:
    deadline = time.monotonic() + 60
    while pool.starting(config) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not pool.starting(config)


@pytest.mark.bwrap
def test_an_acquire_takes_the_start_under_way_rather_than_starting_one_beside_it(
    base_rootfs: str,
) -> None:
    pool = SandboxPool(lambda c: make_sandbox("bwrap", c), size=1)
    config = SandboxConfig(memory_mb=256)
    try:
        pool.prefill(config)  # under way (or, on a fast machine, done already)
        box = pool.acquire(config)
        assert pool.stats.cold == 0 and pool.stats.warm + pool.stats.waited == 1
        assert box.run("echo ok").output.strip() == "ok"
        pool.release(box)
    finally:
        pool.close()


@pytest.mark.bwrap
def test_a_reservation_starts_what_it_will_take_and_taking_it_starts_no_replacement(
    base_rootfs: str,
) -> None:
    made: list[SandboxConfig] = []

    def factory(config: SandboxConfig) -> Sandbox:
        made.append(config)
        return make_sandbox("bwrap", config)

    pool = SandboxPool(factory, size=1)
    config = SandboxConfig(memory_mb=256)
    try:
        reservation = pool.reserve(config, 2)
        assert pool.starting(config) + pool.ready(config) == 2  # both started at once
        _wait_ready(pool, config, 2)
        taken = [reservation.acquire(config), reservation.acquire(config)]
        assert pool.stats.warm == 2 and pool.stats.cold == 0 and reservation.left == 0
        # a verifier's replacement would start beside the grading it serves
        assert pool.starting(config) == 0 and pool.ready(config) == 0 and len(made) == 2
        for box in taken:
            pool.release(box)
        reservation.close()
        again = pool.reserve(config, 2)  # reserved again: the next one's worth ahead too
        assert pool.starting(config) + pool.ready(config) == 4
        _wait_ready(pool, config, 4)
        taken = [again.acquire(config), again.acquire(config)]
        assert pool.stats.warm == 4 and pool.stats.cold == 0 and len(made) == 6
        assert pool.starting(config) == 0 and pool.ready(config) == 2  # none replaced
        for box in taken:
            pool.release(box)
        again.close()
    finally:
        pool.close()
