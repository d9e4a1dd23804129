"""A pool of pre-started sandboxes per configuration, refilled in the background.

`reset` takes a warm sandbox (container started, shell attached) instead of paying for a
cold start, and hands the finished one to a background thread to close. Every sandbox the
pool made is closed when the pool closes, when the process exits normally, and on SIGTERM.
A configuration the pool ran out of gets a deeper warm reserve (adaptive depth), so a loop
that takes two at once or faster than one refill stops waiting for starts. An episode
reserves the verifiers its grading will take when it starts (`reserve`): they are started
for it, and not replaced while they grade.
"""

from __future__ import annotations

import atexit
import functools
import logging
import multiprocessing.util
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, fields

from termgym.sandbox import (
    Backend,
    Sandbox,
    SandboxConfig,
    close_zygotes,
    make_sandbox,
    stop_on_signals,
    stopping,
)

log = logging.getLogger(__name__)

_LIVE_POOLS: weakref.WeakSet[SandboxPool] = weakref.WeakSet()
_SHARED: dict[tuple[str, int, bool], SandboxPool] = {}
_SHARED_LOCK = threading.Lock()
FAILED_START_WAIT = 0.25
"""Seconds a starter waits after a failed pre-start, doubled per failure in a row (to 10)."""


@dataclass(frozen=True)
class PoolStats:
    """How the pool served its acquisitions: `warm` ready at once, `waited` for a start
    already under way, `cold` started by the acquire itself."""

    warm: int
    cold: int
    failed_starts: int
    waited: int = 0


class SandboxPool:
    """Keeps `size` started sandboxes per configuration ready to hand out, more for one that
    ran out.

    Refills run on `starters` threads at once (default: as many as the deepest reserve, at
    most 4), and closes on a thread of their own, so back-to-back resets that drain the pool
    are refilled in parallel instead of one start after another behind the closes
    (docs/performance.md, scale section). An acquire that finds no warm sandbox deepens that
    configuration's reserve by one, up to `size + EXTRA` (adaptive depth): two verifiers a
    grading takes at once, or a loop that resets faster than one start, find theirs warm
    from then on.

    An acquire that finds none ready but one being started (and not yet promised to another
    acquire) waits for that one rather than starting another beside it: on a busy machine a
    second start slows the first, and both arrive later than the first alone would.

    A reserved configuration (`reserve`: the verifiers of an episode's grading) keeps as
    many started as its open reservations will still take: taking one starts no
    replacement, which would start beside the grading it serves, on the same cores. One
    reserved again (episodes of one task, back to back) also keeps the next reservation's
    worth started ahead, from the reservation on; one reserved once (a run over many tasks)
    starts nothing for an episode that may never come.

    Args:
        factory: Builds an unstarted sandbox for a configuration (usually `make_sandbox`).
        size: Warm sandboxes kept per configuration at first; 0 turns the pool off (cold
            starts, no reserve at all).
        starters: Threads starting sandboxes at once (None: min(size + EXTRA, 4)).
        quiet: Seconds the pool's own starts and closes wait after a sandbox was handed out
            or given back, so that a reset (which follows both) lays out its files while the
            engine is not busy with them (a docker reset took 66 ms at p50 with them, 43 ms
            without, at a load of 5).
    """

    EXTRA = 2
    """How much deeper than `size` a configuration's reserve grows when it runs out."""

    def __init__(
        self,
        factory: Callable[[SandboxConfig], Sandbox],
        size: int = 1,
        starters: int | None = None,
        quiet: float = 0.0,
    ) -> None:
        self._factory = factory
        self._size = max(0, size)
        self._quiet = quiet
        self._quiet_until = 0.0
        self._depth: dict[Hashable, int] = {}
        self._ready: dict[Hashable, queue.SimpleQueue[Sandbox]] = {}
        self._starting: dict[Hashable, int] = {}
        self._waiting: dict[Hashable, int] = {}
        self._claims: dict[Hashable, int] = {}
        self._ahead: dict[Hashable, int] = {}
        self._lock = threading.Lock()
        self._starts: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._closes: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._owned: set[Sandbox] = set()
        self._closed = False
        self._warm = self._cold = self._failed = self._waited = 0
        self._failed_in_row = 0
        self._closing = threading.Event()
        deepest = self._size + self.EXTRA if self._size else 0
        count = max(1, starters if starters is not None else min(deepest, 4))
        self._threads = [
            threading.Thread(target=self._run, args=(self._starts,), name="termgym-pool-start")
            for _ in range(count)
        ]
        self._threads.append(
            threading.Thread(target=self._run, args=(self._closes,), name="termgym-pool-close")
        )
        for thread in self._threads:
            thread.daemon = True
            thread.start()
        _LIVE_POOLS.add(self)
        _hook_process_exit()

    @property
    def closed(self) -> bool:
        """True once `close()` ran: the pool hands out cold sandboxes only after that."""
        return self._closed

    @property
    def stats(self) -> PoolStats:
        """Counts of warm and cold acquisitions so far."""
        return PoolStats(self._warm, self._cold, self._failed, self._waited)

    def ready(self, config: SandboxConfig) -> int:
        """How many warm sandboxes for `config` wait to be handed out."""
        with self._lock:
            ready = self._ready.get(_key(config))
        return ready.qsize() if ready is not None else 0

    def starting(self, config: SandboxConfig) -> int:
        """How many sandboxes for `config` are being started (or wait for a starter)."""
        with self._lock:
            return self._starting.get(_key(config), 0)

    def depth(self, config: SandboxConfig) -> int:
        """How many warm sandboxes the pool keeps for `config` now (`size`, or more once it
        ran out)."""
        with self._lock:
            return self._depth.get(_key(config), self._size)

    def acquire(self, config: SandboxConfig) -> Sandbox:
        """A started sandbox for `config`: a warm one if ready, else the next one being
        started if no other acquire waits for it, else one started now (and a deeper reserve
        for `config` from then on, unless it is reserved or was never warmed: a first
        acquire is not a reserve that ran out)."""
        with self._lock:
            seen = _key(config) in self._ready
        ready = self._queue(config)
        try:
            sandbox = ready.get_nowait()
            self._warm += 1
            self._quiet_until = max(self._quiet_until, time.monotonic() + self._quiet)
        except queue.Empty:
            if seen:
                self._deepen(config)
            waited = self._await_start(_key(config), ready)
            if waited is not None:
                sandbox = waited
                self._waited += 1
                self._quiet_until = max(self._quiet_until, time.monotonic() + self._quiet)
            else:
                self._refill(config)  # the deeper reserve starts warming while this one starts
                sandbox = self._start(config)
                self._cold += 1
        self._refill(config)
        return sandbox

    def _await_start(self, key: Hashable, ready: queue.SimpleQueue[Sandbox]) -> Sandbox | None:
        """The next sandbox a start under way for `key` makes, if one is under way that no
        other acquire waits for; None when there is none (or no start is left to wait on)."""
        with self._lock:
            if self._closed or self._starting.get(key, 0) <= self._waiting.get(key, 0):
                return None
            self._waiting[key] = self._waiting.get(key, 0) + 1
        try:
            while True:
                try:
                    return ready.get(timeout=0.02)
                except queue.Empty:
                    with self._lock:
                        done = self._closed or not self._starting.get(key, 0)
                    if done:  # the last start ended: what it made, unless it failed or
                        try:  # another acquire took it
                            return ready.get_nowait()
                        except queue.Empty:
                            return None
        finally:
            with self._lock:
                self._waiting[key] -= 1

    def _deepen(self, config: SandboxConfig) -> None:
        key = _key(config)
        with self._lock:
            if not self._size or key in self._claims:
                return
            self._depth[key] = min(self._depth.get(key, self._size) + 1, self._size + self.EXTRA)

    def release(self, sandbox: Sandbox) -> None:
        """Close a used sandbox in the background (at once if the pool is closed)."""
        self._quiet_until = max(self._quiet_until, time.monotonic() + self._quiet)
        with self._lock:
            if not self._closed:
                self._closes.put(lambda: self._close_one(sandbox))
                return
        self._close_one(sandbox)

    def prefill(self, config: SandboxConfig, count: int = 1) -> None:
        """Start warming sandboxes for `config` before the first acquire: at least `count`
        kept ready from now on (the pool's size or deeper)."""
        self._queue(config)
        if count > 1 and self._size:
            key = _key(config)
            with self._lock:
                depth = self._depth.get(key, self._size)
                self._depth[key] = max(depth, min(count, self._size + self.EXTRA))
        self._refill(config)

    def reserve(self, config: SandboxConfig, count: int = 1) -> Reservation:
        """Start `count` sandboxes for `config` for one taker (an episode's grading): they are
        kept for its reservation until it takes them or closes it, and none replaces one it
        takes (the class docstring): with the next one's worth ahead when `config` was
        reserved before. Without a pool (size 0), nothing starts ahead."""
        key = _key(config)
        self._queue(config)
        with self._lock:
            if key in self._claims:  # reserved again: episodes of this task come back to back
                self._ahead[key] = max(self._ahead.get(key, 0), min(count, self._size + self.EXTRA))
            self._claims[key] = self._claims.get(key, 0) + max(0, count)
        self._refill(config)
        return Reservation(self, config, max(0, count))

    def _unclaim(self, config: SandboxConfig, count: int) -> None:
        with self._lock:
            key = _key(config)
            self._claims[key] = max(0, self._claims.get(key, 0) - count)

    def close(self) -> None:
        """Close every sandbox this pool made, ready or in use. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._closing.set()
        for thread in self._threads:
            (self._closes if thread.name.endswith("close") else self._starts).put(None)
        deadline = time.monotonic() + 30  # for all of them: a start in flight finishes first
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        with self._lock:
            owned = list(self._owned)
        for sandbox in owned:
            self._close_one(sandbox)
        _LIVE_POOLS.discard(self)
        if not any(not pool.closed for pool in list(_LIVE_POOLS)):
            close_zygotes()  # nothing forks verifiers from them any more

    def _queue(self, config: SandboxConfig) -> queue.SimpleQueue[Sandbox]:
        with self._lock:
            return self._ready.setdefault(_key(config), queue.SimpleQueue())

    def _start(self, config: SandboxConfig) -> Sandbox:
        sandbox = self._factory(config)
        with self._lock:
            self._owned.add(sandbox)
        try:
            sandbox.start()
        except BaseException:
            self._close_one(sandbox)
            raise
        return sandbox

    def _refill(self, config: SandboxConfig) -> None:
        """Queue one start per warm slot that is neither ready nor being started."""
        if not self._size or self._closed:
            return
        key = _key(config)
        ready = self._queue(config)
        with self._lock:
            if key in self._claims:
                depth = self._claims[key] + self._ahead.get(key, 0)
            else:
                depth = self._depth.get(key, self._size)
            # a start an acquire waits for is that acquire's, not the reserve's
            under_way = self._starting.get(key, 0) - self._waiting.get(key, 0)
            wanted = depth - ready.qsize() - under_way
            self._starting[key] = self._starting.get(key, 0) + max(0, wanted)
        for _ in range(max(0, wanted)):
            self._starts.put(lambda: self._start_one(config, key, ready))

    def _start_one(
        self, config: SandboxConfig, key: Hashable, ready: queue.SimpleQueue[Sandbox]
    ) -> None:
        try:
            if self._closed:
                return
            try:
                sandbox = self._start(config)
            except Exception as exc:  # a failed warm start shows up as a cold start later
                self._failed += 1
                self._failed_in_row += 1
                if not stopping():  # a stop refuses starts: nothing to say then
                    log.warning("could not pre-start a sandbox: %s", exc)
                # the engine away for a moment (restarting): this starter waits before its
                # next start instead of failing the queue through in a tight loop
                self._closing.wait(min(FAILED_START_WAIT * 2 ** (self._failed_in_row - 1), 10.0))
                return
            self._failed_in_row = 0
            if self._closed:
                self._close_one(sandbox)
                return
            ready.put(sandbox)
        finally:
            with self._lock:
                self._starting[key] -= 1

    def _close_one(self, sandbox: Sandbox) -> None:
        try:
            sandbox.close()
        except Exception as exc:
            log.warning("could not close a sandbox: %s", exc)
        with self._lock:
            self._owned.discard(sandbox)

    def _run(self, jobs: queue.SimpleQueue[Callable[[], None] | None]) -> None:
        while (job := jobs.get()) is not None:
            while not self._closed and (wait := self._quiet_until - time.monotonic()) > 0:
                time.sleep(wait)
            try:
                job()
            except Exception as exc:
                log.warning("pool job failed: %s", exc)


class Reservation:
    """Sandboxes started for one taker (`SandboxPool.reserve`); a `SandboxSource` that takes
    them (or, past them or for another configuration, whatever the pool has)."""

    def __init__(self, pool: SandboxPool, config: SandboxConfig, count: int) -> None:
        self.pool, self.config = pool, config
        self._key = _key(config)
        self._left = count
        self._lock = threading.Lock()

    @property
    def left(self) -> int:
        """How many of the reserved sandboxes are still to be taken."""
        return self._left

    def acquire(self, config: SandboxConfig) -> Sandbox:
        """One of the reserved sandboxes (warm, or the start under way for it)."""
        with self._lock:
            mine = self._left > 0 and _key(config) == self._key
            if mine:
                self._left -= 1
        if mine:
            self.pool._unclaim(config, 1)  # noqa: SLF001 - the pool's own helper
        return self.pool.acquire(config)

    def release(self, sandbox: Sandbox) -> None:
        """Give a taken sandbox back to the pool (closed in the background)."""
        self.pool.release(sandbox)

    def close(self) -> None:
        """Give up what was not taken: the pool keeps no more started for it. Safe twice."""
        with self._lock:
            left, self._left = self._left, 0
        if left:
            self.pool._unclaim(self.config, left)  # noqa: SLF001 - the pool's own helper


def _key(config: SandboxConfig) -> Hashable:
    """A hashable key for a configuration (its mappings are dicts)."""
    parts = []
    for f in fields(config):
        value = getattr(config, f.name)
        parts.append(tuple(sorted(value.items())) if isinstance(value, Mapping) else value)
    return tuple(parts)


_hooked_pid: int | None = None


def _hook_process_exit() -> None:
    """Close every pool when this process ends, once per process.

    atexit covers a normal exit, an exception and Ctrl-C. A multiprocessing child (an
    AsyncVectorEnv worker) leaves through os._exit, which skips atexit but runs
    multiprocessing's exit finalizers, so the pools are registered there too; registrations
    made before a fork do not carry into the child, hence the per-process check. SIGTERM is
    turned, with SIGHUP, into `termgym.sandbox.Stopped` (a SystemExit) in the main thread
    when nobody else handles them (`termgym.sandbox.stop_on_signals`).
    """
    global _hooked_pid
    if _hooked_pid != os.getpid():
        _hooked_pid = os.getpid()
        atexit.register(close_all_pools)
        multiprocessing.util.Finalize(None, close_all_pools, exitpriority=100)
    # signal handlers are set from the main thread only: a pool first made by a worker
    # thread gets its handler when the main thread next makes one
    stop_on_signals()


def shared_pool(backend: str | Backend, size: int, allow_local: bool = False) -> SandboxPool:
    """The process-wide pool for a backend (a name is checked by `Backend.coerce`): envs in
    one process share warm sandboxes.

    A pool that was closed (e.g. by `close_all_pools`) is replaced by a fresh one.
    """
    chosen = Backend.coerce(backend)
    key = (chosen.name, size, allow_local)
    _hook_process_exit()  # here too: the main thread asks for pools that a worker may have made
    with _SHARED_LOCK:
        pool = _SHARED.get(key)
        if pool is None or pool.closed:
            pool = _SHARED[key] = SandboxPool(
                functools.partial(make_sandbox, chosen, allow_local=allow_local),
                size=size, quiet=ENGINE_QUIET if chosen.name == "docker" else 0.0,
            )  # fmt: skip
        return pool


ENGINE_QUIET = 0.15
"""A docker pool's quiet time after each warm hand-out (`SandboxPool`'s `quiet`)."""

_LEASES: dict[tuple[str, int, bool], int] = {}


class PoolLease:
    """A hold on a shared pool: the pool (and every warm sandbox in it) closes when its last
    lease is released, so closing the last env of a process leaves no container running.

    `TerminalEnv` takes one at its first reset and releases it in `close()`; a run holds one
    for its whole length so its short-lived envs share warm sandboxes.
    """

    def __init__(self, backend: str | Backend, size: int, allow_local: bool = False) -> None:
        # a misspelt backend held a pool no env takes: `Backend.coerce` says UnknownBackend
        self._backend = Backend.coerce(backend)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"PoolLease: expected a pool size, an int >= 0, found {size!r}")
        self._key = (self._backend.name, size, allow_local)
        self._pid = os.getpid()
        with _SHARED_LOCK:
            _LEASES[self._key] = _LEASES.get(self._key, 0) + 1
        self._released = False

    @property
    def pool(self) -> SandboxPool:
        """The shared pool this lease holds (made anew if it was closed meanwhile)."""
        return shared_pool(self._backend, self._key[1], self._key[2])

    def __enter__(self) -> PoolLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        """Give the hold up; the last one closes the pool. Safe to call twice."""
        if self._released:
            return
        self._released = True
        if os.getpid() != self._pid:
            return  # a lease made before a fork: the child's pools are its own
        with _SHARED_LOCK:
            left = _LEASES.get(self._key, 0) - 1
            if left > 0:
                _LEASES[self._key] = left
                return
            _LEASES.pop(self._key, None)
            pool = _SHARED.pop(self._key, None)
        if pool is not None:
            pool.close()


def _forget_parent_pools() -> None:
    """In a forked child: the parent's pools are the parent's (their threads did not fork)."""
    global _hooked_pid
    _SHARED.clear()
    _LEASES.clear()
    for pool in list(_LIVE_POOLS):
        _LIVE_POOLS.discard(pool)
    _hooked_pid = None


os.register_at_fork(after_in_child=_forget_parent_pools)


def close_all_pools() -> None:
    """Close every live pool (run at interpreter exit), and the zygotes their verifiers'
    standbys came from."""
    for pool in list(_LIVE_POOLS):
        pool.close()
    close_zygotes()
