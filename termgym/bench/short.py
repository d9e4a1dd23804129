"""The machinery of a short RL episode on bwrap: reset, one command, submit graded in a clean
verifier, recording on (`python -m termgym.bench short`).

Three measurements, side by side in one run:
- warm episodes: the pool has had time to refill (the agent's sandbox and the verifier with
  its standby runner), as while a policy computes its next action;
- the grading alone, handed to the verifier's standby runner or to a cold exec of the runner,
  alternating episode by episode over the same pool (on docker too, where an engine answers);
- back-to-back episodes, no pause at all: episodes/s, and the whole machine's CPU per
  episode (every process and the kernel, from /proc/stat; so whatever else runs on the
  machine is counted too), which says how many such episodes one core runs a second.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from termgym.bench import Row, Section, timings_row

TASK = str(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cargo-limit")
"""One `file` check: what the machinery costs, not a grader."""
TARGET_MS = 100.0


def _busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (all cores, user and kernel)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _wait_warm(pool: Any, *configs: Any, limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while any(pool.ready(c) < 1 for c in configs) and time.monotonic() < deadline:
        time.sleep(0.005)


def _verifier(env: Any) -> Any:
    """The verifier configuration the episode's grading takes from the pool (and warms)."""
    from termgym.grading import pooled_verifiers

    episode = env.unwrapped.episode
    pooled = pooled_verifiers(env.options.config, "bwrap", episode.plan, shadow=False)
    if pooled is None:
        raise RuntimeError(f"expected {TASK} to be graded by verifiers from the pool")
    return pooled[0]


def _warm_episodes(episodes: int) -> list[Row]:
    import termgym
    from termgym.env import shared_pool

    resets, steps, grades, totals = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="termgym-bench-") as tmp:
        env = termgym.make(TASK, backend="bwrap", record_dir=tmp, shadow=False, pool_size=1)
        pool = shared_pool("bwrap", 1)
        try:
            env.reset(seed=0)
            env.step(termgym.SUBMIT)
            verifier = _verifier(env)
            for i in range(episodes):
                _wait_warm(pool, env.options.config, verifier)
                t0 = time.perf_counter()
                env.reset(seed=i)
                t1 = time.perf_counter()
                env.step("echo 100 > answer")
                t2 = time.perf_counter()
                _, reward, *_ = env.step(termgym.SUBMIT)
                t3 = time.perf_counter()
                if reward != 1.0:
                    raise RuntimeError(f"expected the short episode to pass, got {reward}")
                resets.append(t1 - t0)
                steps.append(t2 - t1)
                grades.append(t3 - t2)
                totals.append(t3 - t0)
        finally:
            env.close()
    return [
        timings_row("warm episode: reset", resets),
        timings_row("warm episode: one command, recorded", steps),
        timings_row("warm episode: submit, graded in a verifier", grades),
        timings_row("warm episode: all of it", totals),
    ]


def _grading_side_by_side(episodes: int, backend: str = "bwrap") -> tuple[list[Row], float]:
    """The same final state graded by the standby runner and by a cold exec, alternating."""
    from termgym.env import SandboxPool
    from termgym.grading import grade, prepare, standby_spec, verifier_config
    from termgym.sandbox import SandboxConfig, make_sandbox
    from termgym.tasks import instantiate, load_task

    task = load_task(TASK)
    agent = SandboxConfig(workdir=task.spec.workdir, memory_mb=task.spec.limits.memory_mb)
    pool = SandboxPool(lambda c: make_sandbox(backend, c), size=1)
    warm = verifier_config(agent, standby=standby_spec(task.spec.grading.python))
    cold = verifier_config(agent)
    spent: dict[bool, list[float]] = {True: [], False: []}
    try:
        pool.prefill(warm)
        pool.prefill(cold)
        for i in range(2 * episodes):
            standby = i % 2 == 0
            _wait_warm(pool, warm if standby else cold)
            box = make_sandbox(backend, agent)
            box.start()
            try:
                plan = instantiate(task, "original", seed=i)
                prepare(box, plan)
                box.run("echo 100 > answer")
                t = time.perf_counter()
                report = grade(box, plan, shadow=False, verifiers=pool, standby=standby)
                spent[standby].append(time.perf_counter() - t)
                if not report.passed:
                    raise RuntimeError(f"expected the grading to pass: {report.why}")
            finally:
                box.close()
    finally:
        pool.close()
    rows = [
        timings_row(f"grading alone ({backend}): cold exec of the runner", spent[False]),
        timings_row(f"grading alone ({backend}): standby runner", spent[True]),
    ]
    return rows, rows[0].p50_ms / rows[1].p50_ms


def _back_to_back(episodes: int) -> tuple[float, float, float]:
    """(episodes/s, wall ms per episode, machine CPU ms per episode), no pause between."""
    import termgym

    with tempfile.TemporaryDirectory(prefix="termgym-bench-") as tmp:
        env = termgym.make(TASK, backend="bwrap", record_dir=tmp, shadow=False, pool_size=2)
        try:
            env.reset(seed=0)
            env.step(termgym.SUBMIT)
            time.sleep(1.0)  # the pool fills once, as after a first episode
            busy, began = _busy_seconds(), time.perf_counter()
            for i in range(episodes):
                env.reset(seed=i)
                env.step("echo 100 > answer")
                env.step(termgym.SUBMIT)
            wall = time.perf_counter() - began
            time.sleep(1.0)  # the refills and closes it set off finish, and are counted
            cpu = _busy_seconds() - busy
        finally:
            env.close()
    return episodes / wall, 1000 * wall / episodes, 1000 * cpu / episodes


def bench_short(quick: bool = False) -> Section:
    """The short-episodes section of `python -m termgym.bench`."""
    from termgym.images import docker_answers
    from termgym.sandbox import bwrap_works

    if not bwrap_works():
        return Section(
            name="short",
            title="Short RL episodes on bwrap",
            rows=(),
            notes=("not measured: bubblewrap cannot make its namespaces here",),
        )
    load_before = os.getloadavg()[0]
    rows = _warm_episodes(20 if quick else 60)
    grading_rows, ratio = _grading_side_by_side(10 if quick else 30)
    rows += grading_rows
    docker_note = "docker not measured: no engine answers"
    if docker_answers():
        docker_rows, docker_ratio = _grading_side_by_side(5 if quick else 15, "docker")
        rows += docker_rows
        docker_note = (
            f"grading alone on docker, cold exec / standby runner at p50: {docker_ratio:.2f}x"
        )
    rate, wall_ms, cpu_ms = _back_to_back(20 if quick else 60)
    total = rows[3].p50_ms
    notes = (
        f"machinery per warm short episode, p50: {total:.0f} ms (target at most "
        f"{TARGET_MS:.0f} ms: {'met' if total <= TARGET_MS else 'MISSED'})",
        f"grading alone on bwrap, cold exec / standby runner at p50: {ratio:.2f}x",
        docker_note,
        f"back to back, no pause: {rate:.1f} episodes/s ({wall_ms:.0f} ms each on "
        f"{os.cpu_count()} cores); the whole machine's CPU {cpu_ms:.0f} ms per episode, so one "
        f"core runs {1000 / cpu_ms:.1f} such episodes a second (target 10: "
        f"{'met' if cpu_ms <= TARGET_MS else 'MISSED'})",
        f"machine: {os.cpu_count()} cores; 1-minute load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after (other work on the machine is in the CPU figure)",
    )
    return Section(name="short", title="Short RL episodes on bwrap", rows=tuple(rows), notes=notes)
