"""One job run on this machine, with the run's retries of infrastructure errors.

A local run's worker threads and each Ray worker run their jobs here, so both retry,
set recordings aside and report steps the same way.
"""

from __future__ import annotations

import errno
import shutil
import threading
from dataclasses import replace
from pathlib import Path

from termgym._vocabulary import describe_error
from termgym.agents import Agent, agent_sandbox, close_agent, make_agent
from termgym.env import EnvOptions, TerminalEnv
from termgym.errors import ImageBuildFailed, RecordingError, TermgymError
from termgym.images import engine_away
from termgym.recording import CALLS_SUFFIX
from termgym.run._config import RunConfig
from termgym.run._episode import INFRA_ERRORS, EpisodeResult, episode_path, run_episode
from termgym.run._jobs import Job
from termgym.run._live import LiveMetrics
from termgym.run._progress import ProgressHook, Retrying, StepTaken
from termgym.sandbox import Backend
from termgym.tasks import get_task

RETRY_WAITS = (2.0, 5.0, 10.0)
"""Seconds before each retry of an attempt the engine did not answer (the last repeated)."""


def env_options(config: RunConfig, backend: Backend | None = None) -> EnvOptions:
    """The options of a run's envs, parsed (`EnvOptions.parse`); `backend`: one chosen
    already in place of the config's."""
    return EnvOptions.parse(
        "termgym run",
        backend=backend or config.backend,
        record_dir=config.out,
        agent=config.agent,
        shadow=config.shadow,
        pool_size=config.pool_size,
        run_id=config.run_name,
        runtime=config.runtime,
        rule_draw=config.rule_draw,
    )


class Attempts:
    """Runs a job's attempts: the first, then one per retry the run allows, until one is
    not an infrastructure error.

    Args:
        config: The run.
        progress: Told of each step and retry (nothing, when None).
        live: The run's live metrics (a private set, when None).
        stop: Once set, no further attempt starts.
        options: The options of the run's envs, parsed once (`env_options`); None: parsed
            from `config` by each episode.
    """

    def __init__(
        self,
        config: RunConfig,
        progress: ProgressHook | None = None,
        live: LiveMetrics | None = None,
        stop: threading.Event | None = None,
        options: EnvOptions | None = None,
    ) -> None:
        self.config = config
        self.options = options
        self.progress: ProgressHook = progress or (lambda event: None)
        self.live = live or LiveMetrics(config.out.name, config.agent)
        self.stop = stop or threading.Event()

    def __call__(self, job: Job) -> EpisodeResult:
        """The job's result: its first attempt that is not an infrastructure error, or the
        last error once the retries are spent."""
        set_aside(self.config.out, job, "interrupted")  # what a crashed run left unfinished
        last_error = ""
        attempt = 0
        for attempt in range(1, self.config.retries + 2):
            if self.stop.is_set():
                break
            try:
                result = self._once(job)
                return replace(result, attempts=attempt)
            except (*INFRA_ERRORS, Exception) as exc:  # noqa: BLE001 - a run never aborts
                last_error = describe_error(exc)
                set_aside(self.config.out, job, attempt)
                full = disk_full(exc)
                if full is not None:  # every episode would fail alike: the run stops here
                    raise RecordingError(
                        f"no space left on the disk of {full}; free some, then the same "
                        f"command resumes the run in {self.config.out} (its finished "
                        "episodes are kept)"
                    ) from exc
                if isinstance(exc, ImageBuildFailed) or (
                    isinstance(exc, TermgymError) and not isinstance(exc, INFRA_ERRORS)
                ):
                    break  # a task, image or agent that cannot be made fails the same way again
                if attempt <= self.config.retries and not self.stop.is_set():
                    self.live.retry(job.variant)
                    self.progress(Retrying(job, attempt, last_error))
                    if engine_away(exc):  # restarting, or too busy for a moment: give it
                        # that moment before the next attempt (a stop cuts the wait short)
                        self.stop.wait(RETRY_WAITS[min(attempt, len(RETRY_WAITS)) - 1])
        return EpisodeResult(job=job, status="infra-error", error=last_error, attempts=attempt)

    def _once(self, job: Job) -> EpisodeResult:
        agent = make_agent(self.config.agent, **self.config.agent_options)
        try:
            return self._run(job, agent)
        finally:  # made for this episode: what it started ends with it (a process, a route)
            close_agent(agent)

    def _run(self, job: Job, agent: Agent) -> EpisodeResult:
        needs = agent_sandbox(agent)
        options = self.options or env_options(self.config)
        env = TerminalEnv.from_options(
            get_task(job.task, self.config.paths),
            options.model_copy(update={"agent_sandbox": needs, "gateway": needs.gateway}),
            variant=job.variant,
        )
        try:
            return run_episode(
                job,
                env,
                agent,
                agent_timeout=self.config.agent_timeout,
                on_step=lambda j, n: self.progress(StepTaken(j, n)),
                on_act=lambda j, seconds: self.live.step(j.variant, seconds),
            )
        finally:
            env.close()


def disk_full(exc: BaseException) -> str | None:
    """What ran out of room when `exc` (or what caused it) is the host's "no space left on
    device" or "disk quota exceeded" (the run folder's disk, termgym's cache); else None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return str(seen.filename or "the run folder or termgym's cache")
        seen = seen.__cause__ or seen.__context__
    return None


def set_aside(out: Path, job: Job, attempt: int | str) -> None:
    """Move a failed or unfinished attempt's recording out of the way, kept for a look."""
    path = episode_path(out, job)
    failed = out / "episodes" / "failed"
    tag = f"attempt{attempt}" if isinstance(attempt, int) else attempt
    for source in (path, path.with_suffix(".cast"), path.with_suffix(CALLS_SUFFIX)):
        if source.exists():
            failed.mkdir(exist_ok=True)
            target = failed / f"{source.stem}.{tag}{source.suffix}"
            shutil.move(str(source), _unused(target))


def _unused(path: Path) -> Path:
    """`path`, or the first of path.1, path.2 ... that does not exist yet."""
    candidate, number = path, 0
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}.{number}")
    return candidate
