"""Cost as work grows: concurrent envs, back-to-back resets, Ray's overhead and the driver's
ceiling (`python -m termgym.bench scale`; the machinery of a short RL episode is the
`short` section, termgym.bench.short)."""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from termgym.bench import Row, Section, timings_row
from termgym.run import EpisodeResult, Job, ShippedResult

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
TASK = str(EXAMPLES / "cargo-limit")  # one `file` check: the machinery, not a grader, costs


# -- memory ------------------------------------------------------------------------------------


def _pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _descendants(root: int, tree: dict[int, list[int]]) -> list[int]:
    found, stack = [], list(tree.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack += tree.get(pid, [])
    return found


def _container_pids(run_id: str) -> list[int]:
    """Every process of the run's containers (their cgroups) and each container's shim."""
    import docker.errors

    from termgym.images import docker_client

    pids: list[int] = []
    client = docker_client()
    listed = client.containers.list(filters={"label": f"io.termgym.run={run_id}"}, sparse=True)
    for sparse in listed:
        try:  # a container the pool removes between the list and this look is not counted
            container = client.containers.get(sparse.id)
        except docker.errors.NotFound:
            continue
        init = int(container.attrs["State"]["Pid"] or 0)
        if not init:
            continue
        try:
            group = Path(f"/proc/{init}/cgroup").read_text().strip().split("::", 1)[1]
            procs = Path(f"/sys/fs/cgroup{group}/cgroup.procs").read_text().split()
            pids += [int(p) for p in procs]
            pids.append(int(Path(f"/proc/{init}/stat").read_text().rsplit(")", 1)[1].split()[1]))
        except (OSError, IndexError, ValueError):
            pids.append(init)
    return pids


def _memory_per_env_mb(backend: str, run_id: str, envs: int) -> float:
    """PSS of every process the envs added (workers, sandboxes, docker's shims), per env."""
    pids = set(_descendants(os.getpid(), _children()))
    if backend == "docker":
        pids |= set(_container_pids(run_id))
    return sum(_pss_kb(pid) for pid in pids) / 1024 / envs


# -- 1. concurrent environments ---------------------------------------------------------------


def _factory(backend: str, run_id: str, steps: int) -> Any:
    import termgym

    return termgym.make(
        TASK, backend=backend, pool_size=0, max_steps=steps + 100, run_id=run_id, shadow=False
    )


class _Make:
    def __init__(self, backend: str, run_id: str, steps: int) -> None:
        self.args = (backend, run_id, steps)

    def __call__(self) -> Any:
        return _factory(*self.args)


def _concurrency(backend: str, sizes: tuple[int, ...], seconds: float) -> list[dict[str, Any]]:
    """Aggregate env steps/s of an AsyncVectorEnv of N envs stepping `true`, and memory."""
    from gymnasium.vector import AsyncVectorEnv

    measured = []
    for size in sizes:
        run_id = f"bench-scale-{os.getpid()}-{size}"
        vec = AsyncVectorEnv([_Make(backend, run_id, 100_000)] * size, shared_memory=False)
        try:
            began = time.perf_counter()
            vec.reset(seed=0)
            started = time.perf_counter() - began
            actions = np.array(["true"] * size, dtype=object)
            for _ in range(3):
                vec.step(actions)
            memory = _memory_per_env_mb(backend, run_id, size)
            steps, began = 0, time.perf_counter()
            while time.perf_counter() - began < seconds:
                vec.step(actions)
                steps += 1
            elapsed = time.perf_counter() - began
        finally:
            vec.close()
        measured.append(
            {
                "backend": backend,
                "envs": size,
                "steps_per_s": size * steps / elapsed,
                "memory_mb": memory,
                "start_s": started,
            }
        )
    return measured


# -- 2. back-to-back resets --------------------------------------------------------------------


def _back_to_back(backend: str, pool_size: int, episodes: int) -> tuple[Row, float]:
    """1-step episodes as an RL loop runs them: reset, one command, reset again at once."""
    import termgym

    env = termgym.make(TASK, backend=backend, pool_size=pool_size, shadow=False)
    spent = []
    # each reset abandons a 1-step episode on purpose: the env's "not graded" warning is moot
    warnings.filterwarnings("ignore", message=".*termgym: an episode of", category=UserWarning)
    try:
        env.reset(seed=0)
        time.sleep(1.0 + 0.3 * pool_size)  # let the pool fill once, as after a first episode
        began = time.perf_counter()
        for i in range(episodes):
            t = time.perf_counter()
            env.reset(seed=i)
            spent.append(time.perf_counter() - t)
            env.step("true")
        wall = time.perf_counter() - began
    finally:
        env.close()
    return timings_row(f"back-to-back reset, {backend}, pool {pool_size}", spent), episodes / wall


# -- 3. Ray's overhead and the driver's ceiling ------------------------------------------------


class TrivialWorker:
    """An episode worker that returns a recorded episode at once (the driver's ceiling)."""

    def __init__(self, config: Any, bundles: Any) -> None:
        self.payload = {"x.jsonl": b'{"type": "end"}\n' * 20, "x.cast": b'[0.1, "o", "x"]\n' * 20}

    def run(self, job: Job) -> ShippedResult:
        result = EpisodeResult(job=job, status="ok", reward=1.0, steps=1)
        files = {
            f"{job.episode_id}{Path(name).suffix}": data for name, data in self.payload.items()
        }
        return ShippedResult(result, files, "bench")

    def close(self) -> None:
        return None


def _ray_overhead(episodes: int, backend: str) -> tuple[list[str], dict[str, float]]:
    from termgym.cluster import connect
    from termgym.run import RunConfig, Runner, run_on_ray

    os.environ["TERMGYM_TASKS_PATH"] = str(EXAMPLES)
    ray = connect("local", sandboxes=2)
    figures: dict[str, float] = {}
    notes = []
    with tempfile.TemporaryDirectory(prefix="termgym-bench-ray-") as tmp:
        base = RunConfig(
            agent="oracle",
            tasks=("cargo-limit",),
            variants=("original", "contradicted"),
            episodes=episodes // 2,
            concurrency=2,
            backend=backend,
            out=Path(tmp) / "local",
        )
        for label, config in (
            ("local", base),
            ("ray", replace(base, out=Path(tmp) / "ray", ray="local")),
        ):
            cpu, began = time.process_time(), time.perf_counter()
            summary = Runner(config).run()
            wall, cpu = time.perf_counter() - began, time.process_time() - cpu
            done = sum(r.status == "ok" for r in summary.results)
            figures[f"{label}_per_min"] = 60 * done / wall
            figures[f"{label}_driver_cpu_ms"] = 1000 * cpu / max(done, 1)
        trivial = replace(base, out=Path(tmp) / "trivial", ray="local", episodes=500)
        runner = Runner(trivial)
        (trivial.out / "episodes").mkdir(parents=True)
        jobs = runner.jobs()
        began = time.perf_counter()
        results = run_on_ray(runner, jobs, worker_class=TrivialWorker)
        figures["driver_ceiling_per_s"] = len(results) / (time.perf_counter() - began)
    ray.shutdown()
    notes.append(
        f"the same run ({episodes} episodes of cargo-limit, oracle, {backend}, concurrency 2): "
        f"locally {figures['local_per_min']:.0f} episodes/min, through a one-machine Ray "
        f"cluster {figures['ray_per_min']:.0f} episodes/min "
        f"({figures['ray_per_min'] / figures['local_per_min']:.2f}x)"
    )
    notes.append(
        f"driver CPU per episode: {figures['ray_driver_cpu_ms']:.1f} ms on Ray "
        f"(local run: {figures['local_driver_cpu_ms']:.1f} ms, which includes the episodes); "
        f"driver ceiling with trivial episodes (dispatch, collect, write 2 files, results line): "
        f"{figures['driver_ceiling_per_s']:.0f} episodes/s"
    )
    return notes, figures


def _ray_vector(envs: int, seconds: float) -> str:
    """A RayVectorEnv on the local Ray stepping `true`: env steps/s, the driver's CPU per env
    step (what bounds one driver), and the memory of one actor process."""
    from termgym.cluster import connect
    from termgym.vector import RayVectorEnv

    ray = connect("local", sandboxes=envs)
    vec = RayVectorEnv(TASK, envs, backend="bwrap", max_steps=100_000, shadow=False)
    try:
        vec.reset(seed=0)
        actions = np.array(["true"] * envs, dtype=object)
        for _ in range(3):
            vec.step(actions)
        pids = ray.get([actor.pid.remote() for actor in vec.actors])
        actor_mb = sum(_pss_kb(pid) for pid in pids) / 1024 / envs
        steps, cpu, began = 0, time.process_time(), time.perf_counter()
        while time.perf_counter() - began < seconds:
            vec.step(actions)
            steps += 1
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    finally:
        vec.close()
    per_step_ms = 1000 * cpu / (steps * envs)
    return (
        f"RayVectorEnv of {envs} (local Ray, bwrap): {steps * envs / wall:.0f} env steps/s; "
        f"driver CPU {per_step_ms:.2f} ms per env step (one driver core: about "
        f"{1000 / per_step_ms:.0f} env steps/s); {actor_mb:.0f} MB PSS per actor process"
    )


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def bench_scale(quick: bool = False) -> Section:
    """The scale section of `python -m termgym.bench`."""
    from termgym.images import docker_answers
    from termgym.sandbox import bwrap_works

    backends = [b for b, ok in (("docker", docker_answers()), ("bwrap", bwrap_works())) if ok]
    sizes = (1, 2, 4, 8) if quick else (1, 2, 4, 8, 16, 32, 64)
    load_before = _load()
    notes: list[str] = []
    rows: list[Row] = []
    concurrency = {b: _concurrency(b, sizes, 1.0 if quick else 3.0) for b in backends}
    for size_index, size in enumerate(sizes):
        parts = []
        for backend in backends:
            m = concurrency[backend][size_index]
            parts.append(
                f"{backend} {m['steps_per_s']:.0f} env steps/s, {m['memory_mb']:.1f} MB/env, "
                f"all started in {m['start_s']:.1f} s"
            )
        notes.append(f"{size} concurrent envs: " + "; ".join(parts))
    rates: dict[str, float] = {}
    for backend in backends:
        for pool_size in (1, 4) if quick else (1, 4, 8):
            row, rate = _back_to_back(backend, pool_size, 15 if quick else 40)
            rows.append(row)
            rates[f"{backend} pool {pool_size}"] = rate
    notes.append(
        "back-to-back 1-step episodes: "
        + "; ".join(f"{label}: {rate:.1f} episodes/s" for label, rate in rates.items())
    )
    if "bwrap" in backends:
        try:
            ray_notes, _ = _ray_overhead(8 if quick else 40, "bwrap")
            notes += ray_notes
            notes.append(_ray_vector(4 if quick else 8, 1.0 if quick else 3.0))
        except Exception as exc:  # noqa: BLE001 - Ray missing: the other figures still stand
            notes.append(f"Ray overhead not measured: {type(exc).__name__}: {exc}")
    notes.append(
        f"machine: {os.cpu_count()} cores; 1-minute load average {load_before} before, "
        f"{_load()} after (other work on the machine slows every figure)"
    )
    return Section(
        name="scale",
        title="Scale: concurrent envs, back-to-back resets, Ray",
        rows=tuple(rows),
        notes=tuple(notes),
    )
