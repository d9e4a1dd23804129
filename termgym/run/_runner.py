"""`termgym run`: many episodes of one agent across tasks and variants, in parallel."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from termgym._version import __version__
from termgym._vocabulary import Variant
from termgym.agents import AgentSandbox, agent_sandbox, check_agent, close_agent, make_agent
from termgym.env import PoolLease, close_all_pools
from termgym.errors import AgentError, ImageError, RecordingError, TaskError, TermgymError
from termgym.images import docker_answers, layer_image
from termgym.recording import append_result, export_episode, read_run_header, write_run_header
from termgym.run._attempts import Attempts, env_options
from termgym.run._config import RunConfig
from termgym.run._episode import EpisodeResult, result_line
from termgym.run._jobs import Job, finished_episodes, plan_jobs, select_tasks
from termgym.run._live import LiveMetrics, MetricsServer, audit_recording
from termgym.run._progress import (
    EpisodeDone,
    MetricsServing,
    ProgressEvent,
    ProgressHook,
    RunPlanned,
)
from termgym.run._ray import run_on_ray
from termgym.sandbox import (
    Backend,
    collect_bwrap_garbage,
    collect_garbage,
    resume,
    stop_sandboxes,
    stopped_by,
)
from termgym.tasks import TaskSpec, get_task, list_tasks, task_image

STOP_GRACE = 60.0
"""Seconds an interrupted run waits for its worker threads to end (their sandboxes are gone,
so each ends at its next step; an agent's own call, a model's answer, may take longer)."""
SIGNAL_GRACE = 5.0
"""As long, when a signal stopped the process: its exit does not wait for them."""


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


class Runner:
    """Runs a RunConfig's episodes with bounded concurrency, retries and resumption."""

    def __init__(self, config: RunConfig, progress: ProgressHook | None = None) -> None:
        self._config = config
        self._progress: ProgressHook = progress or (lambda event: None)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._agent_sandbox = AgentSandbox()
        self.left_out: list[str] = []
        self.live = LiveMetrics(config.out.name, config.agent)
        self._server: MetricsServer | None = None
        self._attempts = Attempts(config, self._progress, self.live, self._stop)

    @property
    def config(self) -> RunConfig:
        """The run."""
        return self._config

    def report(self, event: ProgressEvent) -> None:
        """Tell the run's progress hook of `event` (an executor's events too)."""
        self._progress(event)

    @property
    def metrics_port(self) -> int | None:
        """The port the live metrics are served on while the run runs (None: not served)."""
        return self._server.port if self._server is not None else None

    def jobs(self) -> list[Job]:
        """Every episode of the run, whether or not already finished."""
        paths = self.config.paths
        available = [task.id for task in list_tasks(paths)]
        task_ids = select_tasks(list(self.config.tasks), available)
        variants: dict[str, list[Variant]] = {}
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
        self._check()
        if self._check_resumable(out):
            self._remove_leftovers()
        jobs = self.jobs()
        self._install_layers(jobs)
        if not jobs:
            raise TaskError(
                f"no episode to run: expected a task among {', '.join(self.config.tasks)} "
                f"that offers one of the variants {', '.join(self.config.variants)}"
                + (f" ({'; '.join(self.left_out)})" if self.left_out else "")
                + "; `termgym tasks` lists each task's variants"
            )
        try:
            (out / "episodes").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RecordingError(
                f"{out}: expected a run folder that can be written: {exc}"
            ) from exc
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
            results = run_on_ray(self, todo)
            return RunSummary(tuple(results), skipped, time.monotonic() - started, out)
        pool = ThreadPoolExecutor(max_workers=max(1, self.config.concurrency))
        pending: set[Future[EpisodeResult]] = set()
        try:
            with PoolLease(self._backend(), self.config.pool_size):
                pending = {pool.submit(self._attempts, job) for job in todo}
                while pending:
                    finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                    for future in finished:
                        self.record(future.result(), results)
        except BaseException:
            self._interrupted(pool, pending)
            raise
        pool.shutdown(wait=True)
        return RunSummary(tuple(results), skipped, time.monotonic() - started, out)

    def _interrupted(self, pool: ThreadPoolExecutor, pending: set[Future[EpisodeResult]]) -> None:
        """Ctrl-C, a signal or an error: no episode starts, every sandbox of the run goes at
        once (the running episodes then end as infrastructure errors, set aside and run
        again when the run folder is resumed), and the worker threads are given
        `STOP_GRACE` seconds to end."""
        self._stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        stop_sandboxes()
        close_all_pools()
        running = [f for f in pending if not f.cancelled()]  # one that never ran is done
        if stopped_by() is not None:  # a signal: the process ends, its exit waits no longer
            wait(running, timeout=SIGNAL_GRACE)
            return
        wait(running, timeout=STOP_GRACE)
        resume()  # the process goes on (a notebook's interrupted cell): sandboxes may start

    def _check(self) -> None:
        """Refuse, before any episode is planned or recorded, an agent, an agent option or a
        backend that would fail every episode the same way (counted as infrastructure
        errors, each retried, were they found in the episodes)."""
        if self.config.ray:  # the workers build it, from files and settings of their own
            check_agent(self.config.agent, **self.config.agent_options)
        else:  # built once, as each episode builds it: its own checks run too (a model name)
            agent = make_agent(self.config.agent, **self.config.agent_options)
            try:
                self._agent_sandbox = agent_sandbox(agent)
            finally:
                close_agent(agent)
        options = env_options(self.config)  # what every episode's env takes, parsed once
        if not self.config.ray:  # and the backend, chosen once
            self._attempts.options = options.model_copy(
                update={"backend": options.chosen_backend()}
            )
        elif self.config.runtime:  # each node picks the best of its own (`EpisodeWorker`)
            options.chosen_backend()

    def _install_layers(self, jobs: list[Job]) -> None:
        """Build the layer the agent declares (its program, from the registries) over each
        task image of the run, once, before any episode: an install that fails is said
        once, here, as the agent's error, not once per episode."""
        layer = self._agent_sandbox.layer
        if layer is None or self.config.ray:
            return
        for task_id in sorted({job.task for job in jobs}):
            image = task_image(get_task(task_id, self.config.paths))
            try:
                layer_image(image, layer, log=lambda line: None)
            except ImageError as exc:
                raise AgentError(
                    f"{self.config.agent}: its program could not be installed over {image} "
                    f"({layer.name}), so no episode ran:\n{exc}"
                ) from exc

    def _check_resumable(self, out: Path) -> bool:
        """A run folder is resumed by the run it holds: the episodes already there count as
        done, so another agent, agent option, seed or rule draw would mix two runs under
        the new header (an agent's run reported done by another's episodes). True when the
        folder holds a run to resume."""
        previous = read_run_header(out)
        if previous is None:
            return False
        now = json.loads(json.dumps(self._identity(), default=str))
        differ = [
            f"{key} {previous[key]!r} (now {now[key]!r})"
            for key in now
            if key in previous and previous[key] != now[key]
        ]
        if differ:
            raise RecordingError(
                f"{out} holds a run of another {', '.join(differ)}; expected the same to "
                "resume it (its finished episodes are not run again): give another --out"
            )
        return True

    def _remove_leftovers(self) -> None:
        """The sandboxes an earlier process of this run left when it was killed (SIGKILL, a
        lost machine): those labelled with the run whose starting process is gone."""
        labels = {"io.termgym.run": self.config.run_name}
        with contextlib.suppress(TermgymError):
            collect_bwrap_garbage(labels=labels)
        if docker_answers():
            with contextlib.suppress(TermgymError):
                collect_garbage(labels=labels)

    def _identity(self) -> dict[str, object]:
        """What run.json keeps of the run that a resumed run must share."""
        return {
            "agent": self.config.agent,
            "agent_options": {
                k: v for k, v in self.config.agent_options.items() if "key" not in k.lower()
            },
            "seed": self.config.seed,
            # never the secret: its fingerprint and the period (docs/held-out-values.md); a
            # run resumed in another period would mix two periods' values (--period resumes)
            "draw": self.config.rule_draw.public(),
        }

    def close(self) -> None:
        """Stop serving the live metrics (a run keeps serving them until closed)."""
        if self._server is not None:
            self._server.close()
            self._server = None

    def record(self, result: EpisodeResult, results: list[EpisodeResult]) -> None:
        """Keep a finished job's result: results.jsonl, the ATIF export, live metrics and
        progress; appended to `results`."""
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

    def _backend(self) -> Backend:
        """The backend of this run's envs, and of the shared pool held for the whole run, so
        the short-lived env of each episode takes a warm sandbox instead of closing the pool
        (chosen by `_check`)."""
        if self._attempts.options is None:
            self._attempts.options = env_options(self.config)
        return self._attempts.options.chosen_backend()

    def _write_header(self, out: Path, total: int) -> None:
        header = {
            "run_id": self.config.run_name,
            **self._identity(),
            "tasks": list(self.config.tasks),
            "paths": list(self.config.paths),
            "variants": list(self.config.variants),
            "episodes": self.config.episodes,
            "concurrency": self.config.concurrency,
            "backend": self.config.backend,
            "runtime": self.config.runtime,
            "ray": self.config.ray,
            "left_out": list(self.left_out),
            "total_episodes": total,
            "termgym": __version__,
            "started": time.time(),
        }
        write_run_header(out, header)

    def _append_result(self, out: Path, result: EpisodeResult) -> None:
        with self._lock:
            try:
                append_result(out, result_line(result))
            except OSError as exc:
                raise RecordingError(
                    f"{out}: could not append the result of {result.job.episode_id} to "
                    f"results.jsonl ({exc.strerror or exc}); the same command resumes the run"
                ) from exc


def _has_held_out(spec: TaskSpec, variant: Variant) -> bool:
    """Whether split "eval" can shift `variant` of the task (unshifted variants always can)."""
    if variant == "sampled":
        return any(r.has_held_out for r in spec.rules.values())
    if variant == "contradicted":
        return any(r.has_held_out and r.contradict is not None for r in spec.rules.values())
    return True
