"""The async API against threads: 64 concurrent episodes from one asyncio loop vs 64 threads.

Both sides run the same episodes (reset, a few commands, submit, grading) of the same task
on bwrap, alternated in one run, so the ratio compares like with like on a loaded machine.
The async side also measures how late a 10 ms timer fires on its loop while the episodes
run: the loop never waits on sandbox I/O.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from termgym.bench import Row, Section, timings_row

TASK = "text-report"
COMMANDS = ("true", "echo step", "ls /app > /dev/null")


def _make(count: int) -> list[Any]:
    from termgym.env import make

    return [make(TASK, backend="bwrap", max_steps=50, shadow=False, run_id="bench-async")
            for _ in range(count)]  # fmt: skip


def _sync_episode(env: Any, seed: int, steps: int) -> list[float]:
    from termgym import SUBMIT

    times = []
    began = time.perf_counter()
    env.reset(seed=seed)
    times.append(time.perf_counter() - began)
    for i in range(steps):
        began = time.perf_counter()
        env.step(COMMANDS[i % len(COMMANDS)])
        times.append(time.perf_counter() - began)
    began = time.perf_counter()
    env.step(SUBMIT)
    times.append(time.perf_counter() - began)
    return times


async def _async_episode(env: Any, seed: int, steps: int) -> list[float]:
    from termgym import SUBMIT

    times = []
    began = time.perf_counter()
    await env.areset(seed=seed)
    times.append(time.perf_counter() - began)
    for i in range(steps):
        began = time.perf_counter()
        await env.astep(COMMANDS[i % len(COMMANDS)])
        times.append(time.perf_counter() - began)
    began = time.perf_counter()
    await env.astep(SUBMIT)
    times.append(time.perf_counter() - began)
    return times


def _threads(envs: list[Any], steps: int, seed: int) -> tuple[float, list[float]]:
    began = time.perf_counter()
    with ThreadPoolExecutor(len(envs)) as pool:
        results = list(pool.map(lambda e: _sync_episode(e[1], seed + e[0], steps), enumerate(envs)))
    return time.perf_counter() - began, [t for r in results for t in r]


def _asyncio(envs: list[Any], steps: int, seed: int) -> tuple[float, list[float], list[float]]:
    async def main() -> tuple[float, list[float], list[float]]:
        lags: list[float] = []
        done = asyncio.Event()

        async def ticker() -> None:
            while not done.is_set():
                began = time.perf_counter()
                await asyncio.sleep(0.01)
                lags.append(time.perf_counter() - began - 0.01)

        tick = asyncio.create_task(ticker())
        began = time.perf_counter()
        results = await asyncio.gather(
            *(_async_episode(env, seed + i, steps) for i, env in enumerate(envs))
        )
        elapsed = time.perf_counter() - began
        done.set()
        await tick
        return elapsed, [t for r in results for t in r], lags

    return asyncio.run(main())


def bench_async(quick: bool = False) -> Section:
    """The `async` section of `python -m termgym.bench`."""
    count, steps, rounds = 64, (4 if quick else 8), (1 if quick else 2)
    envs = _make(count)
    per_round = count * (steps + 1)  # steps counted: commands and the submit
    rates: dict[str, list[float]] = {"asyncio": [], "threads": []}
    step_times: dict[str, list[float]] = {"asyncio": [], "threads": []}
    lags: list[float] = []
    try:
        _threads(envs[:4], 1, 0)  # warm: the root filesystem, the task's files
        for n in range(rounds):
            elapsed, times = _threads(envs, steps, 1000 * n)
            rates["threads"].append(per_round / elapsed)
            step_times["threads"].extend(times)
            elapsed, times, lag = _asyncio(envs, steps, 1000 * n + 500)
            rates["asyncio"].append(per_round / elapsed)
            step_times["asyncio"].extend(times)
            lags.extend(lag)
    finally:
        for env in envs:
            env.close()
    each = f"one call (reset, step, submit) of {count} concurrent"
    rows: tuple[Row, ...] = (
        timings_row(f"asyncio: {each}", step_times["asyncio"]),
        timings_row(f"threads: {each}", step_times["threads"]),
        timings_row("asyncio: lateness of a 10 ms timer on the loop meanwhile", lags or [0.0]),
    )
    a, t = statistics.fmean(rates["asyncio"]), statistics.fmean(rates["threads"])
    notes = (
        f"{count} concurrent episodes of {TASK} on bwrap ({steps} commands + submit each, "
        f"{rounds} round(s) alternated): asyncio {a:.0f} env steps/s, threads {t:.0f} env "
        f"steps/s; asyncio/threads = {a / t:.2f} (target: at least 0.9, "
        f"{'met' if a / t >= 0.9 else 'MISSED'})",
    )
    return Section(
        name="async",
        title="Async API: 64 concurrent episodes from one asyncio loop vs threads",
        rows=rows,
        notes=notes,
    )
