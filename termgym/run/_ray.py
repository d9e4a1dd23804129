"""`termgym run --ray ADDRESS`: a run's episodes on the nodes of a Ray cluster.

The driver (this process) keeps everything a local run keeps: the job list, resumption from
the run folder, retries, results.jsonl and the progress hooks. Episodes run in
`EpisodeWorker` actors, each holding one unit of the `termgym_sandbox` resource, so a node
never runs more episodes than it advertises. A worker records its episode into a folder of
its own node and sends the finished files back with the result; the driver writes them under
`--out` exactly where a local run writes them, only once an episode is over, so a run folder
never holds half an episode from a node. A worker lost with its node (or killed) fails its
episode with an actor error: the driver retries it on another worker, and containers the
dead worker left are removed by each node's reaper (at the start and end of the run).
"""

from __future__ import annotations

import os
import shutil
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from termgym.cluster import (
    SANDBOX_RESOURCE,
    TaskBundle,
    bundle_task,
    connect,
    new_scratch,
    reap_run_here,
    reap_run_on_every_node,
    reap_scratch_here,
    sandbox_capacity,
    unpack_bundles,
)
from termgym.errors import ClusterError
from termgym.recording import signed_here
from termgym.run._attempts import Attempts, env_options, set_aside
from termgym.run._config import RunConfig
from termgym.run._episode import EpisodeResult
from termgym.run._executor import RunSide
from termgym.run._jobs import Job
from termgym.run._progress import RanOnNode, Retrying


@dataclass(frozen=True)
class ShippedResult:
    """What a worker sends home: the result and the files its attempts recorded.

    Attributes:
        result: The job's result (its `episode_file` names the worker's copy).
        files: Path relative to the run's episodes/ folder -> content.
        node_id: The Ray node that ran the episode.
    """

    result: EpisodeResult
    files: dict[str, bytes]
    node_id: str


class EpisodeWorker:
    """Runs jobs one at a time on its node, as a local run's worker thread does.

    Made as a Ray actor by `run_on_ray`; keeps the node's warm sandbox pool for its life.
    """

    def __init__(self, config: RunConfig, bundles: tuple[TaskBundle, ...]) -> None:
        from termgym.env import PoolLease
        from termgym.sandbox import Backend

        unpack_bundles(bundles)
        reap_scratch_here()  # what workers killed on this node left
        self.scratch = new_scratch()
        backend = Backend.coerce(config.backend)  # None: this node's best
        if backend.name == "docker":
            from termgym.images import build_base

            build_base()  # cached by content: seconds when the node has it
        self.config = replace(
            config,
            out=self.scratch / config.out.name,
            run_id=config.run_name,
            ray=None,
            backend=backend.name,
            paths=(),  # the driver's folders: this node resolves tasks from the bundles
        )
        self.options = env_options(self.config, backend)
        self.lease = PoolLease(backend, config.pool_size)
        import ray

        self.node_id = str(ray.get_runtime_context().get_node_id())

    def run(self, job: Job) -> ShippedResult:
        """Run one job (with the run's retries of infrastructure errors on this node)."""
        reap_run_here(self.config.run_name)  # what a killed worker of this node left
        reap_scratch_here()
        episodes = self.config.out / "episodes"
        shutil.rmtree(episodes, ignore_errors=True)
        episodes.mkdir(parents=True)
        result = Attempts(self.config, options=self.options)(job)
        files = {
            str(path.relative_to(episodes)): path.read_bytes()
            for path in sorted(episodes.rglob("*"))
            if path.is_file()
        }
        shutil.rmtree(episodes, ignore_errors=True)
        return ShippedResult(result, files, self.node_id)

    def pid(self) -> int:
        """The worker's process id (tests kill it)."""
        return os.getpid()

    def close(self) -> None:
        """Close the node's pools (every container this worker started) and its scratch."""
        from termgym.env import close_all_pools

        self.lease.release()
        close_all_pools()
        shutil.rmtree(self.scratch, ignore_errors=True)
        reap_scratch_here()  # and what workers lost on this node during the run left


def run_on_ray(
    runner: RunSide, todo: list[Job], worker_class: type = EpisodeWorker
) -> list[EpisodeResult]:
    """Run `todo` on the cluster at `runner.config.ray`; results in the order they finish.

    The executor of a run on Ray: it uses the run only through `RunSide`.

    `worker_class` runs the episodes (`EpisodeWorker`; the scale benchmark passes one that
    returns at once, to measure what the driver itself can dispatch and collect).
    """
    config = runner.config
    ray = connect(config.ray or "auto", sandboxes=config.concurrency)
    from ray.exceptions import RayActorError, RayError

    capacity = sandbox_capacity()
    run_id = config.run_name
    reap_run_on_every_node(run_id)  # a driver killed before this run left these
    bundles = ray.put(_bundles(todo, config.paths))
    actor_class = ray.remote(worker_class)
    made = 0

    def spawn(count: int) -> list[Any]:
        nonlocal made
        made += count
        return [
            actor_class.options(
                num_cpus=0,
                resources={SANDBOX_RESOURCE: 1},
                max_restarts=0,
                max_concurrency=2,  # close() may be called while run() is busy
                name=None,
            ).remote(config, bundles)
            for _ in range(count)
        ]

    workers = spawn(min(config.concurrency, capacity)) if todo else []
    free: deque[Any] = deque(workers)
    queue: deque[tuple[Job, int]] = deque((job, 1) for job in todo)
    pending: dict[Any, tuple[Any, Job, int]] = {}
    results: list[EpisodeResult] = []
    try:
        while queue or pending:
            while free and queue:
                worker = free.popleft()
                job, attempt = queue.popleft()
                set_aside(config.out, job, "interrupted")
                pending[worker.run.remote(job)] = (worker, job, attempt)
            if not pending:  # every worker was lost: make new ones where sandboxes are left
                workers = spawn(min(config.concurrency, sandbox_capacity()))
                free.extend(workers)
                continue
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in ready:
                worker, job, attempt = pending.pop(ref)
                try:
                    shipped: ShippedResult = ray.get(ref)
                except (RayActorError, RayError) as exc:
                    _lost(runner, job, attempt, exc, queue, results)
                    continue  # the worker is gone (or broken): not returned to `free`
                runner.report(RanOnNode(job, shipped.node_id))
                runner.record(_write_home(config, shipped), results)
                free.append(worker)
    except BaseException:
        for ref in pending:  # Ctrl-C: stop asking; the workers' close below ends their episodes
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001 - already finished, or its worker gone
                continue
        raise
    finally:
        _close(ray, [w for w in list(free) + [p[0] for p in pending.values()]])
        reap_run_on_every_node(run_id)
    return results


def _lost(
    runner: RunSide,
    job: Job,
    attempt: int,
    exc: BaseException,
    queue: deque[tuple[Job, int]],
    results: list[EpisodeResult],
) -> None:
    """A worker died under `job` (its node lost, or it was killed): an infrastructure error,
    retried on another worker while the run's retries last."""
    error = f"ClusterError: the Ray worker running the episode was lost ({type(exc).__name__})"
    if attempt <= runner.config.retries:
        runner.report(Retrying(job, attempt, error))
        queue.appendleft((job, attempt + 1))
        return
    lost = EpisodeResult(job=job, status="infra-error", error=error, attempts=attempt)
    runner.record(lost, results)


def _write_home(config: RunConfig, shipped: ShippedResult) -> EpisodeResult:
    """Write a worker's files under the run folder (each atomically) and point the result's
    `episode_file` at the driver's copy."""
    episodes = config.out / "episodes"
    for relative, data in shipped.files.items():
        parts = Path(relative).parts
        if not parts or Path(relative).is_absolute() or ".." in parts or len(parts) > 2:
            raise ClusterError(f"expected a file name under episodes/, got {relative!r}")
        target = episodes / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(f".{target.name}.{os.getpid()}.part")
        # a worker's recording is this run's: signed by this machine, as a local one is
        staging.write_bytes(signed_here(data) if target.suffix == ".jsonl" else data)
        os.replace(staging, target)
    result = shipped.result
    if result.episode_file:
        result = replace(result, episode_file=str(episodes / Path(result.episode_file).name))
    return result


def _bundles(todo: list[Job], paths: tuple[str, ...]) -> tuple[TaskBundle, ...]:
    """The task folders the jobs need, packed; bundled tasks stay home (every node has
    them, in the same termgym version)."""
    from termgym._task_paths import BUNDLED
    from termgym.tasks import get_task

    seen: dict[str, TaskBundle | None] = {}
    for job in todo:
        if job.task not in seen:
            root = get_task(job.task, paths).root
            bundled = root.resolve().is_relative_to(BUNDLED.resolve())
            seen[job.task] = None if bundled else bundle_task(job.task, root)
    return tuple(bundle for bundle in seen.values() if bundle is not None)


def _close(ray: Any, workers: list[Any]) -> None:
    """Ask every live worker to close its sandboxes, then end it."""
    refs = []
    for worker in workers:
        try:
            refs.append(worker.close.remote())
        except Exception:  # noqa: BLE001 - a dead worker has nothing to close
            continue
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=60)
    for worker in workers:
        try:
            ray.kill(worker)
        except Exception:  # noqa: BLE001
            continue
