"""Environment speed: step overhead over the raw sandbox, warm vs cold reset, vector throughput."""

from __future__ import annotations

import tempfile
import time

import numpy as np

from termgym.bench import Row, Section, timings_row

TASK = "text-report"


def _step_overhead(n: int) -> tuple[Row, Row, str]:
    """env.step("true") and sandbox.run("true") interleaved in one sandbox, recording on."""
    from termgym.env import make

    with tempfile.TemporaryDirectory(prefix="termgym-bench-") as tmp:
        env = make(TASK, record_dir=tmp, pool_size=0, max_steps=10 * n + 100)
        try:
            env.reset(seed=0)
            sandbox = env.episode.sandbox  # type: ignore[union-attr]
            for _ in range(30):
                env.step("true")
                sandbox.run("true")
            raw, stepped = [], []
            for _ in range(n):
                began = time.perf_counter()
                sandbox.run("true")
                raw.append(time.perf_counter() - began)
                began = time.perf_counter()
                env.step("true")
                stepped.append(time.perf_counter() - began)
        finally:
            env.close()
    raw_row = timings_row("raw sandbox.run(`true`)", raw)
    env_row = timings_row("env.step(`true`), recording on", stepped)
    overhead = env_row.p50_ms - raw_row.p50_ms
    note = (
        f"env.step overhead over the raw sandbox step, p50: {overhead:.3f} ms "
        f"(target at most 0.5 ms: {'met' if overhead <= 0.5 else 'MISSED'})"
    )
    return raw_row, env_row, note


def _resets(n: int) -> tuple[Row, Row, str]:
    """reset() with a warm pool (waiting for it to refill between resets) and with none."""
    from termgym.env import make, shared_pool

    rows = []
    for pool_size, label in ((1, "reset, warm pool"), (0, "reset, cold container start")):
        env = make(TASK, pool_size=pool_size)
        pool = shared_pool(env.options.backend, pool_size, False)
        spent = []
        try:
            env.reset(seed=0)
            for i in range(n):
                deadline = time.monotonic() + 30
                while pool_size and pool.ready(env.options.config) < 1:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
                began = time.perf_counter()
                env.reset(seed=i)
                spent.append(time.perf_counter() - began)
        finally:
            env.close()
        rows.append(timings_row(label, spent))
    warm, cold = rows
    note = (
        f"reset p50: warm {warm.p50_ms:.1f} ms vs cold {cold.p50_ms:.1f} ms "
        f"({cold.p50_ms / max(warm.p50_ms, 1e-9):.1f}x; target warm at most 50 ms: "
        f"{'met' if warm.p50_ms <= 50 else 'MISSED'})"
    )
    return warm, cold, note


def _vector_throughput(sizes: tuple[int, ...], steps: int) -> list[str]:
    from gymnasium.vector import AsyncVectorEnv

    from termgym.env import make

    notes = []
    for size in sizes:
        vec = AsyncVectorEnv(
            [lambda: make(TASK, pool_size=0, max_steps=steps + 10) for _ in range(size)],
            shared_memory=False,
        )
        try:
            vec.reset(seed=0)
            actions = np.array(["true"] * size, dtype=object)
            for _ in range(5):
                vec.step(actions)
            began = time.perf_counter()
            for _ in range(steps):
                vec.step(actions)
            elapsed = time.perf_counter() - began
        finally:
            vec.close()
        notes.append(
            f"AsyncVectorEnv of {size}: {size * steps / elapsed:.0f} env steps/s "
            f"({steps / elapsed:.0f} vector steps/s)"
        )
    return notes


def bench_env(quick: bool = False) -> Section:
    """The environment section of `python -m termgym.bench`."""
    raw, stepped, overhead = _step_overhead(200 if quick else 1000)
    warm, cold, reset_note = _resets(5 if quick else 15)
    throughput = _vector_throughput((1, 2, 4, 8), 50 if quick else 200)
    return Section(
        name="env",
        title="Environment: step overhead, reset, vector throughput",
        rows=(raw, stepped, warm, cold),
        notes=(overhead, reset_note, *throughput),
    )
