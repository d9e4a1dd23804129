"""`termgym run`: many episodes of one agent across tasks and variants, in parallel."""

from __future__ import annotations

import json
import shutil
import threading
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from termgym._version import __version__
from termgym._vocabulary import describe_error
from termgym.agents import make_agent
from termgym.env import TerminalEnv
from termgym.env._pool import PoolLease, close_all_pools
from termgym.errors import ImageBuildFailed, RecordingError, TermgymError
from termgym.recording import export_episode
from termgym.run._episode import INFRA_ERRORS, EpisodeResult, describe, episode_path, run_episode
from termgym.run._jobs import Job, finished_episodes, plan_jobs, select_tasks
from termgym.run._live import LiveMetrics, MetricsServer, audit_recording
from termgym.run._progress import (
    EpisodeDone,
    MetricsServing,
    ProgressHook,
    Retrying,
    RunPlanned,
    StepTaken,
)
from termgym.tasks import ContradictMode, Rotation, RuleDraw, Split, TaskSpec, get_task, list_tasks


@dataclass(frozen=True)
class RunConfig:
    """What a run is: which agent, on which tasks and variants, how many, how fast.

    Attributes:
        agent: Registered agent name (oracle, memorizer, replay, llm, ...).
        tasks: Glob patterns over task ids.
        variants: Variant names; a task that does not offer one skips it.
        episodes: Episodes per (task, variant).
        concurrency: Episodes run at once.
        out: The run folder (recordings, results, run.json).
        backend: Sandbox backend, or None for the best available.
        seed: Run seed; each episode's seed derives from it.
        agent_options: Keyword options for the agent factory.
        agent_timeout: Seconds the agent may act per episode (None: the task's limit).
        retries: Attempts beyond the first for infrastructure failures.
        shadow: Shadow-grade every episode.
        pool_size: Warm sandboxes per configuration.
        runtime: Docker runtime of the sandboxes ("runsc" for gVisor), None for the default.
        paths: Folders of tasks searched before $TERMGYM_TASKS_PATH and the bundled ones.
        split: "train" or "eval": which values the shifted variants draw
            (docs/held-out-values.md); with "eval", a shifted variant of a task without
            held-out values is left out of the run (`Runner.left_out` says which).
        contradict: "drawn" (a non-original value per episode) or "fixed" (the authored one).
        rotation: The evaluator's secret and period (never written anywhere), or None.
        metrics_port: Serve the run's metrics live on this port (None: no server; 0: any
            free port, see `Runner.metrics_port`).
        ray: Ray cluster address ("auto", "local", "ray://head:10001"); None runs here.
            On Ray, `concurrency` episode workers spread over the nodes that advertise
            sandboxes (docs/scaling.md), at most as many as those nodes hold.
        run_id: Put on every container as `io.termgym.run` and into recordings; defaults to
            the run folder's name.
        atif: Also write each finished episode as an ATIF trajectory, `<out>/atif/<id>.json`
            (docs/recording-format.md).
    """

    agent: str
    tasks: tuple[str, ...] = ("*",)
    variants: tuple[str, ...] = ("original", "contradicted", "withheld")
    episodes: int = 1
    concurrency: int = 2
    out: Path = Path("runs/latest")
    backend: str | None = None
    seed: int = 0
    agent_options: dict[str, Any] = field(default_factory=dict)
    agent_timeout: float | None = None
    retries: int = 2
    shadow: bool = True
    pool_size: int = 1
    runtime: str | None = None
    paths: tuple[str, ...] = ()
    split: Split = "train"
    contradict: ContradictMode = "drawn"
    rotation: Rotation | None = None
    metrics_port: int | None = None
    ray: str | None = None
    run_id: str = ""
    atif: bool = False

    @property
    def rule_draw(self) -> RuleDraw:
        """How the run's shifted variants draw their values."""
        return RuleDraw(self.split, self.contradict, self.rotation)

    @property
    def run_name(self) -> str:
        """The run id: `run_id`, or the run folder's name."""
        return self.run_id or self.out.name


@dataclass(frozen=True)
class RunSummary:
    """What a run did: results of the episodes run now, and those a previous attempt did."""

    results: tuple[EpisodeResult, ...]
    skipped: tuple[str, ...]
    wall_seconds: float
    out: Path

    @property
    def infra_errors(self) -> int:
        """Episodes that failed for infrastructure reasons after every retry."""
        return sum(r.status == "infra-error" for r in self.results)


def _unused(path: Path) -> Path:
    """`path`, or the first of path.1, path.2 ... that does not exist yet."""
    candidate, number = path, 0
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}.{number}")
    return candidate


class Runner:
    """Runs a RunConfig's episodes with bounded concurrency, retries and resumption."""

    def __init__(self, config: RunConfig, progress: ProgressHook | None = None) -> None:
        self.config = config
        self._progress: ProgressHook = progress or (lambda event: None)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.left_out: list[str] = []
        self.live = LiveMetrics(config.out.name, config.agent)
        self._server: MetricsServer | None = None

    @property
    def metrics_port(self) -> int | None:
        """The port the live metrics are served on while the run runs (None: not served)."""
        return self._server.port if self._server is not None else None

    def jobs(self) -> list[Job]:
        """Every episode of the run, whether or not already finished."""
        paths = self.config.paths
        available = [task.id for task in list_tasks(paths)]
        task_ids = select_tasks(list(self.config.tasks), available)
        variants: dict[str, list[str]] = {}
        self.left_out = []
        for task_id in task_ids:
            spec = get_task(task_id, paths).spec
            variants[task_id] = []
            for variant in self.config.variants:
                if variant not in spec.variants:
                    continue
                if self.config.split == "eval" and not _has_held_out(spec, variant):
                    self.left_out.append(f"{task_id} {variant}: no held-out values to draw")
                    continue
                variants[task_id].append(variant)
        return plan_jobs(task_ids, variants, self.config.episodes, self.config.seed)

    def run(self) -> RunSummary:
        """Run what is not finished yet; Ctrl-C stops it and leaves no sandbox behind."""
        out = self.config.out
        (out / "episodes").mkdir(parents=True, exist_ok=True)
        jobs = self.jobs()
        done = finished_episodes(out)
        todo = [job for job in jobs if job.episode_id not in done]
        skipped = tuple(job.episode_id for job in jobs if job.episode_id in done)
        self._write_header(out, len(jobs))
        self._progress(RunPlanned(len(jobs), len(skipped)))
        self.live.planned(len(jobs), len(skipped))
        if self.config.metrics_port is not None and self._server is None:
            self._server = MetricsServer(self.live, self.config.metrics_port).start()
            self._progress(MetricsServing(self._server.port))
        started = time.monotonic()
        results: list[EpisodeResult] = []
        if self.config.ray:
            from termgym.run._ray import run_on_ray

            results = run_on_ray(self, todo)
            return RunSummary(tuple(results), skipped, time.monotonic() - started, out)
        try:
            with (
                PoolLease(*self._pool_key()),
                ThreadPoolExecutor(max_workers=max(1, self.config.concurrency)) as pool,
            ):
                pending: set[Future[EpisodeResult]] = {
                    pool.submit(self._attempts, job) for job in todo
                }
                try:
                    while pending:
                        finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                        for future in finished:
                            self._record(future.result(), results)
                except BaseException:
                    # Stop now: queued episodes never start and running ones lose their
                    # sandboxes, instead of the executor draining the whole queue first.
                    self._stop.set()
                    pool.shutdown(wait=False, cancel_futures=True)
                    close_all_pools()
                    raise
        except BaseException:
            self._stop.set()
            close_all_pools()
            raise
        return RunSummary(tuple(results), skipped, time.monotonic() - started, out)

    def close(self) -> None:
        """Stop serving the live metrics (a run keeps serving them until closed)."""
        if self._server is not None:
            self._server.close()
            self._server = None

    def _record(self, result: EpisodeResult, results: list[EpisodeResult]) -> None:
        results.append(result)
        self._append_result(self.config.out, result)
        if self.config.atif and result.episode_file:
            try:
                export_episode(result.episode_file, self.config.out / "atif")
            except RecordingError as exc:  # the run goes on; `termgym export atif` says why
                warnings.warn(
                    f"termgym run: no ATIF export of {result.job.episode_id}: {exc}", stacklevel=1
                )
        self.live.episode(result, audit_recording(result.episode_file))
        self._progress(EpisodeDone(result))

    def _pool_key(self) -> tuple[str, int]:
        """The shared pool this run's envs use: held for the whole run, so the short-lived
        env of each episode takes a warm sandbox instead of closing the pool."""
        from termgym.sandbox import default_backend

        return self.config.backend or default_backend(), self.config.pool_size

    def _attempts(self, job: Job) -> EpisodeResult:
        self._set_aside(job, "interrupted")  # a recording a crashed run left unfinished
        last_error = ""
        attempt = 0
        for attempt in range(1, self.config.retries + 2):
            if self._stop.is_set():
                break
            try:
                result = self._once(job)
                return replace(result, attempts=attempt)
            except (*INFRA_ERRORS, Exception) as exc:  # noqa: BLE001 - a run never aborts
                last_error = describe_error(exc)
                self._set_aside(job, attempt)
                if isinstance(exc, ImageBuildFailed) or (
                    isinstance(exc, TermgymError) and not isinstance(exc, INFRA_ERRORS)
                ):
                    break  # a task, image or agent that cannot be made fails the same way again
                if attempt <= self.config.retries and not self._stop.is_set():
                    self.live.retry(job.variant)
                    self._progress(Retrying(job, attempt, last_error))
        return EpisodeResult(job=job, status="infra-error", error=last_error, attempts=attempt)

    def _once(self, job: Job) -> EpisodeResult:
        agent = make_agent(self.config.agent, **self.config.agent_options)
        env = TerminalEnv(
            get_task(job.task, self.config.paths),
            variant=job.variant,
            backend=self.config.backend,
            record_dir=self.config.out,
            agent=self.config.agent,
            shadow=self.config.shadow,
            pool_size=self.config.pool_size,
            run_id=self.config.run_name,
            runtime=self.config.runtime,
            rule_draw=self.config.rule_draw,
        )
        try:
            return run_episode(
                job,
                env,
                agent,
                agent_timeout=self.config.agent_timeout,
                on_step=lambda j, n: self._progress(StepTaken(j, n)),
                on_act=lambda j, seconds: self.live.step(j.variant, seconds),
            )
        finally:
            env.close()

    def _set_aside(self, job: Job, attempt: int | str) -> None:
        """Move a failed or unfinished attempt's recording out of the way, kept for a look."""
        path = episode_path(self.config.out, job)
        failed = self.config.out / "episodes" / "failed"
        tag = f"attempt{attempt}" if isinstance(attempt, int) else attempt
        for source in (path, path.with_suffix(".cast")):
            if source.exists():
                failed.mkdir(exist_ok=True)
                target = failed / f"{source.stem}.{tag}{source.suffix}"
                shutil.move(str(source), _unused(target))

    def _write_header(self, out: Path, total: int) -> None:
        header = {
            "run_id": self.config.run_name,
            "agent": self.config.agent,
            "agent_options": {
                k: v for k, v in self.config.agent_options.items() if "key" not in k.lower()
            },
            "tasks": list(self.config.tasks),
            "paths": list(self.config.paths),
            "variants": list(self.config.variants),
            "episodes": self.config.episodes,
            "concurrency": self.config.concurrency,
            "backend": self.config.backend,
            "runtime": self.config.runtime,
            "ray": self.config.ray,
            "seed": self.config.seed,
            # never the secret: its fingerprint and the period (docs/held-out-values.md)
            "draw": self.config.rule_draw.public(),
            "left_out": list(self.left_out),
            "total_episodes": total,
            "termgym": __version__,
            "started": time.time(),
        }
        (out / "run.json").write_text(json.dumps(header, indent=2) + "\n")

    def _append_result(self, out: Path, result: EpisodeResult) -> None:
        with self._lock, (out / "results.jsonl").open("a") as handle:
            handle.write(json.dumps(describe(result)) + "\n")


def _has_held_out(spec: TaskSpec, variant: str) -> bool:
    """Whether split "eval" can shift `variant` of the task (unshifted variants always can)."""
    if variant == "sampled":
        return any(r.has_held_out for r in spec.rules.values())
    if variant == "contradicted":
        return any(r.has_held_out and r.contradict is not None for r in spec.rules.values())
    return True
