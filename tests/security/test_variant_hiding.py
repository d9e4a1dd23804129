"""Nothing the agent can read while it works tells its episode's variant.

Verifiers are started while the agent works, and every sandbox reads counters the host's
kernel keeps for all (`/proc/meminfo`'s Shmem grew by 244 kB a verifier, the threads of
`/proc/loadavg` by one, docker's loop disks are listed in `/proc/partitions`). When an
episode started as many verifiers as its own rule sets needed, an audit read the variant
off them: one for original and withheld, two for contradicted, sampled and swapped, three
for impossible; swapped (whose files are the original's) and impossible (which an honest
agent reports) were told apart from the rest. Every episode of a task now starts as many
as its most demanding variant needs.
"""

from __future__ import annotations

import time

import termgym
from termgym.env._pool import close_all_pools

VARIANTS = ("original", "withheld", "contradicted", "sampled", "swapped", "impossible")


def _started_while_it_works(variant: str) -> tuple[int, int]:
    """(the verifiers reserved for one text-report episode of `variant`, those the pool
    holds started for it once its starts are done), from a pool of its own."""
    close_all_pools()
    env = termgym.make("text-report", backend="bwrap", variant=variant, pool_size=1)
    try:
        env.reset(seed=3)
        episode = env.episode
        assert episode is not None and episode.verifiers is not None
        pool, config = episode.verifiers.pool, episode.verifiers.config
        deadline = time.monotonic() + 120
        while pool.starting(config) and time.monotonic() < deadline:
            time.sleep(0.05)
        return episode.verifiers.left, pool.ready(config)
    finally:
        env.close()
        close_all_pools()


def test_the_verifiers_started_while_the_agent_works_are_the_same_for_every_variant(
    base_rootfs: str,
) -> None:
    seen = {variant: _started_while_it_works(variant) for variant in VARIANTS}
    assert len(set(seen.values())) == 1, seen
    assert seen["impossible"][0] == 3, seen  # its own, the original's, and the stated one
