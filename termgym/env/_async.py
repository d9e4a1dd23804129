"""The async API: `await env.areset()`, `await env.astep(action)`, never blocking the loop.

A step's work is sandbox I/O (a command in the episode's shell, an engine call) and, at the
end, grading in a verifier. The coroutines hand that work to termgym's own I/O threads and
await it, so one asyncio loop can drive hundreds of episodes while an async inference client
shares the loop. The pool is not asyncio's default executor, which has min(32, cores + 4)
threads (6 on a 2-core machine) and would queue the 7th concurrent step behind the others.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

DEFAULT_IO_THREADS = 512
"""Concurrent blocking calls the async API runs at once (threads start as they are needed)."""

_executor: ThreadPoolExecutor | None = None
_executor_size = DEFAULT_IO_THREADS
_lock = threading.Lock()


def set_io_threads(count: int) -> None:
    """Set how many blocking env calls the async API runs at once (default 512).

    Takes effect for calls made after it; calls under way finish on the old threads.
    """
    global _executor, _executor_size
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"expected a positive int number of I/O threads, got {count!r}")
    with _lock:
        old, _executor, _executor_size = _executor, None, count
    if old is not None:
        old.shutdown(wait=False)


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(_executor_size, thread_name_prefix="termgym-aio")
        return _executor


def _forget_after_fork() -> None:
    global _executor
    _executor = None  # the parent's threads did not fork


os.register_at_fork(after_in_child=_forget_after_fork)


async def run_blocking(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run `func(*args, **kwargs)` on termgym's I/O threads and await its result."""
    loop = asyncio.get_running_loop()
    future: Future[T] = _pool().submit(func, *args, **kwargs)
    return await asyncio.wrap_future(future, loop=loop)


class AsyncEnvMixin:
    """`areset`, `astep`, `astop` and `aclose` beside an environment's sync methods.

    Each coroutine runs the sync method on termgym's I/O threads, so results, infos,
    recordings and grading are exactly the sync API's. One call at a time per environment:
    a second call while one is under way raises RuntimeError (step different environments
    concurrently instead). A cancelled call's work still finishes in its thread; the
    environment takes a new call once it has.
    """

    _async_busy: str | None = None

    async def areset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """`reset()` without blocking the event loop."""
        return await self._in_thread("areset", self.reset, seed=seed, options=options)  # type: ignore[attr-defined]

    async def astep(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """`step(action)` without blocking the event loop."""
        return await self._in_thread("astep", self.step, action)  # type: ignore[attr-defined]

    async def astop(
        self, reason: str = "time limit"
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """`stop(reason)` (end and grade the episode now) without blocking the event loop."""
        return await self._in_thread("astop", self.stop, reason)  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        """`close()` without blocking the event loop."""
        await self._in_thread("aclose", self.close)  # type: ignore[attr-defined]

    async def _in_thread(self, name: str, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._async_busy is not None:
            raise RuntimeError(
                f"{name}() called while {self._async_busy}() is still running on this "
                "environment; await it first (one call at a time per environment)"
            )
        self._async_busy = name

        def call() -> T:
            try:
                return func(*args, **kwargs)
            finally:
                self._async_busy = None  # in the thread: a cancelled await frees it too

        return await run_blocking(call)
