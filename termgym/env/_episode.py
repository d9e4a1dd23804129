"""One episode's lifecycle: sandbox, screen, recording and grading, behind TerminalEnv."""

from __future__ import annotations

import contextlib
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from termgym._version import __version__
from termgym._vocabulary import (
    GRADER_ERROR,
    INFRA_ERROR,
    STATED,
    EndClass,
    ShadowClass,
    describe_error,
)
from termgym.agents import AgentSandbox
from termgym.env import _evidence
from termgym.env._infos import stackable_verdicts
from termgym.env._keys import sendable
from termgym.env._options import EnvOptions
from termgym.env._pool import Reservation, SandboxPool, shared_pool
from termgym.env._schedule import VariantSchedule
from termgym.env._timing import Duration
from termgym.errors import DiskLimitExceeded, GraderError, SandboxCrashed
from termgym.grading import GradeReport, classify, grade, pooled_verifiers, prepare
from termgym.images import layer_image
from termgym.recording import (
    AgentLog,
    EpisodeEnd,
    EpisodeHeader,
    EpisodeWriter,
    Recorder,
    StepRecord,
    Window,
    kept_trajectory,
    reported_steps,
)
from termgym.sandbox import (
    DOCKER_DEFAULT_CAPS,
    NO_BYTECODE,
    Backend,
    Changes,
    GatewayMount,
    RunResult,
    Sandbox,
    SandboxConfig,
    stopping,
)
from termgym.screen import TerminalScreen
from termgym.tasks import (
    EpisodePlan,
    RuleDraw,
    Task,
    audit_hints,
    get_task,
    instantiate,
    task_image,
)


def resolve_task(task: Task | str | Path) -> Task:
    """A loaded task from a Task, a task folder, or a task id."""
    return task if isinstance(task, Task) else get_task(str(task))


def sandbox_config(
    task: Task,
    run_id: str = "",
    runtime: str | None = None,
    *,
    interactive: bool = False,
    image: str | None = None,
    gateway: GatewayMount | None = None,
) -> SandboxConfig:
    """The sandbox a task's episodes run in (its image is built first if it has a Dockerfile).

    `interactive`: the shell is a person's terminal (keys mode), not command mode's bare one.
    `image`: the task's image, built already.
    `gateway`: the model gateway its agent reaches (`termgym.gateway`).
    """
    limits = task.spec.limits
    labels = {"io.termgym.task": task.id}
    if run_id:
        labels["io.termgym.run"] = run_id
    return SandboxConfig(
        image=image or task_image(task),
        workdir=task.spec.workdir,
        network=limits.network,
        memory_mb=limits.memory_mb,
        # docker refuses a CPU limit above the host's cores; the task gets all of them then
        cpus=min(limits.cpus, float(os.cpu_count() or 1)),
        disk_mb=limits.disk_mb,
        labels=labels,
        runtime=runtime,
        interactive=interactive,
        capabilities=DOCKER_DEFAULT_CAPS if limits.capabilities == "default" else (),
        # an imported task runs in its image's environment, as under its harness
        env={} if task.spec.provenance else NO_BYTECODE,
        gateway=gateway,
    )


@dataclass(frozen=True)
class EpisodeOptions:
    """Everything fixed at make time that each episode is built from."""

    task: Task
    schedule: VariantSchedule
    sandbox_backend: Backend
    """The backend, checked once where the env was made (`Backend.coerce`)."""
    mode: str
    max_steps: int
    step_timeout: float
    record_dir: Path | None
    agent: str
    shadow: bool
    pool_size: int
    allow_local: bool
    config: SandboxConfig
    run_id: str = ""
    runtime: str | None = None
    draw: RuleDraw = field(default_factory=RuleDraw)
    recorder: Callable[[EpisodeHeader], Recorder] | None = None
    """Makes each episode's recorder from its header (record_dir: EpisodeWriter's)."""
    weak_isolation: str = "pay"
    """What a verdict graded with a defence not holding pays: "pay" or "withhold" (0)."""
    agent_sandbox: AgentSandbox = field(default_factory=AgentSandbox)
    """What the agent declared its sandboxes need (a layer over the task's image)."""
    gateway: GatewayMount | None = None
    """The model gateway the agent's sandboxes reach (`termgym.gateway`), or None."""

    @classmethod
    def build(cls, task: Any, variant: Any, options: EnvOptions) -> EpisodeOptions:
        """Resolve the task, the variant schedule and the backend once, from options parsed
        already (`EnvOptions.parse`)."""
        loaded = resolve_task(task)
        schedule = VariantSchedule.coerce(variant, loaded.spec)
        chosen = options.chosen_backend()
        chosen.check_gateway(options.gateway is not None)
        limits = loaded.spec.limits
        needs = options.agent_sandbox
        image = layer_image(task_image(loaded), needs.layer) if needs.layer else None
        return cls(
            task=loaded,
            schedule=schedule,
            sandbox_backend=chosen,
            mode=options.mode,
            max_steps=int(options.max_steps or limits.max_steps),
            step_timeout=float(options.step_timeout or limits.agent_timeout),
            record_dir=options.record_dir,
            agent=options.agent,
            shadow=options.shadow,
            pool_size=options.pool_size,
            allow_local=options.allow_local,
            config=sandbox_config(
                loaded,
                options.run_id,
                options.runtime,
                interactive=options.mode == "keys",
                image=image,
                gateway=options.gateway,
            ),
            run_id=options.run_id,
            runtime=options.runtime,
            draw=options.rule_draw,
            recorder=options.recorder,
            weak_isolation=options.weak_isolation,
            agent_sandbox=needs,
            gateway=options.gateway,
        )

    @property
    def backend(self) -> str:
        """The backend's name."""
        return self.sandbox_backend.name

    def pick(
        self, rng: np.random.Generator, episode_index: int, steps: int
    ) -> tuple[str, RuleDraw, dict[str, Any]]:
        """Variant, rule draw and rule switch of an episode, from the schedule's stage."""
        variant, stage = self.schedule.pick(rng, episode_index, steps)
        draw = self.draw
        if stage.split is not None and stage.split != draw.split:
            draw = replace(draw, split=stage.split)  # type: ignore[arg-type]
        return variant, draw, stage.switched


STOPPED_ERROR = "termgym was stopped (a signal or Ctrl-C) as the episode was graded"


@dataclass(frozen=True)
class Outcome:
    """How an episode ended: its reward and what the final info reports."""

    reward: float
    variant: str
    rules_enforced: dict[str, Any]
    verdicts: dict[str, Any]
    episode_class: EndClass | None
    error: str | None
    episode_file: str | None
    grading_seconds: float
    grading: dict[str, Any] = field(default_factory=dict)
    """How the verdict was reached: "filesystem" (work or snapshot) and "isolation" (which
    of the verifier's defences did not hold: docs/security.md), and "unpaid" (the reward
    such a verdict would have paid, held back by `weak_isolation="withhold"`); empty when
    not graded."""
    conflict: str | None = None
    tamper: dict[str, Any] | None = None

    def info(self) -> dict[str, Any]:
        """The final step's info entries, each of one type whatever the episode
        (`termgym.env._infos`): no tamper evidence read is an empty mapping."""
        return {
            "variant": self.variant,
            "rules_enforced": self.rules_enforced,
            "verdicts": stackable_verdicts(self.verdicts),
            "class": self.episode_class,
            "error": self.error,
            "episode_file": self.episode_file,
            "grading_duration": Duration(self.grading_seconds),
            "grading": self.grading,
            "conflict": self.conflict,
            "tamper": self.tamper if self.tamper is not None else {},
        }


@dataclass
class Episode:
    """A live episode: the sandbox, the emulated screen, the recorder and the step count."""

    options: EpisodeOptions
    plan: EpisodePlan
    sandbox: Sandbox
    pool: SandboxPool
    episode_id: str
    seed: int
    screen: TerminalScreen = field(default_factory=TerminalScreen)
    writer: Recorder | None = None
    steps: int = 0
    finished: bool = False
    transcript: Callable[[], list[dict[str, Any]]] | None = None
    started: float = field(default_factory=time.monotonic)
    opening: bytes = b""
    """Keys mode: what the terminal showed before the first step (the shell's prompt)."""
    laid_out: Changes | None = None
    """The changes outside the work once the task was laid out (its setup's): not the agent's."""
    reference: dict[str, Any] | None = None
    """What the harness told a privileged agent besides the task (`attach_reference`)."""
    verifiers: Reservation | None = None
    """The verifiers its grading takes, started for it when it began (`pooled_verifiers`)."""
    agent_log: Callable[[], AgentLog | None] | None = None
    """The agent's own account of the episode (`attach_agent_log`), read at its end."""
    windows: list[Window] = field(default_factory=list)
    """When each recorded step ran (seconds from `started`): where the agent's reported
    steps go."""
    deadline: float | None = None
    """time.monotonic() by which the agent's time is up (`set_deadline`): a command still
    running then is stopped as a timed-out step."""

    @classmethod
    def begin(
        cls,
        options: EpisodeOptions,
        *,
        variant: str,
        seed: int,
        episode_id: str,
        draw: RuleDraw | None = None,
        switched: dict[str, Any] | None = None,
        pool: SandboxPool | None = None,
    ) -> Episode:
        """Instantiate the variant, take a warm sandbox (from `pool`, by default the process's
        shared pool of the backend), lay out the task, start recording."""
        plan = instantiate(options.task, variant, seed, draw or options.draw, switched)
        if pool is None:
            pool = shared_pool(options.sandbox_backend, options.pool_size, options.allow_local)
        # the verifiers its grading takes start while the agent works: beside the agent's
        # sandbox if that one starts cold, else once it is handed out (the pool's quiet time
        # then keeps the engine free while the task is laid out)
        warm = pooled_verifiers(options.config, options.backend, plan, shadow=options.shadow)
        verifiers = None
        if warm is not None and not pool.ready(options.config):
            verifiers = pool.reserve(*warm)
        try:
            sandbox = pool.acquire(options.config)
        except BaseException:
            if verifiers is not None:
                verifiers.close()
            raise
        if warm is not None and verifiers is None:
            verifiers = pool.reserve(*warm)
        screen = TerminalScreen(options.config.cols, options.config.rows)
        episode = cls(options, plan, sandbox, pool, episode_id, seed, screen)
        episode.verifiers = verifiers
        try:
            prepare(sandbox, plan)
            episode.laid_out = _evidence.baseline(sandbox, plan)
        except BaseException:
            episode._give_back()
            raise
        if options.mode == "keys":
            try:  # the prompt the terminal shell printed once the task was laid out
                episode.opening = sandbox.send_keys(b"", settle=0.05, timeout=1.0).raw
            except BaseException:
                episode._give_back()
                raise
            screen.feed(episode.opening)
        try:  # a recorder that cannot start (an id already recorded, a folder not writable)
            if options.recorder is not None:
                episode.writer = options.recorder(episode.header())
            elif options.record_dir is not None:
                episode.writer = EpisodeWriter(options.record_dir, episode.header())
        except BaseException:
            episode._give_back()  # or the sandbox ran on, unused, until the env closed
            raise
        return episode

    @property
    def instruction(self) -> str:
        """The instruction as the agent sees it in this episode."""
        return str(self.plan.instruction)

    def header(self) -> EpisodeHeader:
        """The recording header of this episode."""
        return EpisodeHeader(
            episode_id=self.episode_id,
            task=self.options.task.id,
            task_version=self.options.task.spec.version,
            variant=self.plan.variant,
            rules_visible=dict(self.plan.rules_visible),
            rules_enforced=dict(self.plan.rules_enforced),
            seed=self.seed,
            agent=self.options.agent,
            backend=self.options.backend,
            versions={"termgym": __version__, "python": platform.python_version()},
            started=time.time(),
            cols=self.options.config.cols,
            rows=self.options.config.rows,
            run_id=self.options.run_id,
            initial_output=self.opening,
            extra={
                "instruction": self.instruction,
                "mode": self.options.mode,
                "visible_files": {
                    path: data.decode("utf-8", "replace") for path, data in self.plan.files.items()
                },
                "max_steps": self.options.max_steps,
                # never the secret: its fingerprint and the period (docs/held-out-values.md)
                "draw": self.plan.draw.public(),
                **({"switched": dict(self.plan.switched)} if self.plan.switched else {}),
                **({"surface": dict(self.plan.surface)} if self.plan.surface else {}),
                **({"conflict": self.plan.conflict.to_dict()} if self.plan.conflict else {}),
                **(
                    {"protected": list(self.options.task.spec.protected)}
                    if self.options.task.spec.protected
                    else {}
                ),
                **audit_hints(self.options.task),
            },
        )

    def command(self, command: str) -> RunResult:
        """Run a command in the episode's shell."""
        sent = sendable(command)
        timeout = self.options.step_timeout
        if self.deadline is not None:  # at least a moment: the command starts and is stopped
            timeout = max(0.05, min(timeout, self.deadline - time.monotonic()))
        result = self.sandbox.run(sent, timeout=timeout)
        echo = "$ " + sent.replace("\r\n", "\n").replace("\n", "\r\n") + "\r\n"
        typed = echo.encode("utf-8", "surrogateescape")
        self.record("command", command, result, typed + result.raw)
        return result

    def keys(self, action: str, keys: bytes) -> RunResult:
        """Type keystrokes into the episode's terminal."""
        result = self.sandbox.send_keys(keys)
        self.record("keys", action, result, result.raw)
        return result

    def screen_text(self) -> str:
        """The emulated screen after the latest step."""
        return self.screen.text()

    def finish(
        self,
        *,
        submitted: bool,
        crash: SandboxCrashed | None = None,
        conflict: str | None = None,
    ) -> Outcome:
        """Grade the final state (with shadows) in a clean verifier, close the recording.

        A grading failure caused by the agent's work is scored 0 with class "grader-error"
        (counted); a failure of termgym's machinery gets class "error" (retried by runs and
        left out of every rate). `crash`: the sandbox died under the agent's last command
        (its files are graded all the same; a disk-limit overrun is the agent's failure).
        `conflict`: the reason the agent gave when it reported a conflict (REPORT_CONFLICT).
        Once graded, the frozen sandbox is read for tamper evidence (`_evidence`).
        """
        self.finished = True
        started = time.monotonic()
        verdicts: dict[str, Any] = {}
        episode_class: EndClass | None = None
        error: str | None = None
        reward = 0.0
        facts: dict[str, Any] = {}
        graded = False
        try:
            if crash is not None and isinstance(crash, DiskLimitExceeded):
                raise GraderError(str(crash))
            report = grade(
                self.sandbox, self.plan, shadow=self.options.shadow,
                verifiers=self.verifiers or self.pool,
            )  # fmt: skip
            graded = True
            reward = float(report.score or 0.0)
            verdicts = report.to_dict()["verdicts"]
            episode_class = episode_class_of(self.plan, report)
            facts = {"filesystem": report.filesystem, "isolation": list(report.isolation)}
            if report.isolation and reward and self.options.weak_isolation == "withhold":
                facts["unpaid"], reward = reward, 0.0
        except GraderError as exc:
            error, episode_class = describe_error(exc), GRADER_ERROR
            partial = exc.report
            if isinstance(partial, GradeReport):
                verdicts = partial.to_dict()["verdicts"]
        except Exception as exc:  # noqa: BLE001 - never a crash of env.step
            error, episode_class = describe_error(exc), INFRA_ERROR
        if stopping() and episode_class != INFRA_ERROR:
            # the process stopped as it graded (its sandboxes closed under the grading):
            # no verdict of the agent's, whatever the grading made of what was left
            error, episode_class, reward, verdicts, facts = STOPPED_ERROR, INFRA_ERROR, 0.0, {}, {}
        grading_seconds = time.monotonic() - started
        tamper = None
        if episode_class != INFRA_ERROR:
            tamper = self._tamper(graded).to_dict()
        outcome = Outcome(
            reward=reward,
            variant=self.plan.variant,
            rules_enforced=dict(self.plan.rules_enforced),
            verdicts=verdicts,
            episode_class=episode_class,
            error=error,
            episode_file=_episode_file(self.writer),
            grading_seconds=grading_seconds,
            grading=facts,
            conflict=conflict,
            tamper=tamper,
        )
        if self.writer is not None:
            own = self._agent_log()
            self.writer.end(
                EpisodeEnd(
                    reward=reward,
                    terminated=submitted,
                    truncated=not submitted,
                    verdicts=verdicts,
                    episode_class=episode_class,
                    error=error,
                    audit=[],
                    extra={
                        "grading_seconds": grading_seconds,
                        "grading": facts,
                        "steps": self.steps,
                        "transcript": self.transcript() if self.transcript else [],
                        **({"reference": self.reference} if self.reference else {}),
                        **({"agent_log": own} if own else {}),
                    },
                    conflict=conflict,
                    tamper=tamper,
                )
            )
            self.writer.close()
        self._give_back()
        return outcome

    def _agent_log(self) -> dict[str, Any] | None:
        """Write the steps the agent's own log says it ran (`reported` lines, before the end
        line) and return what the end keeps of that log. Evidence for reading only: nothing
        that grades, audits or replays reads either (termgym.recording._reported)."""
        if self.agent_log is None or self.writer is None:
            return None
        try:
            log = self.agent_log()
        except Exception as exc:  # noqa: BLE001 - the agent's account is best effort
            return {"error": f"the agent's log could not be read: {exc}"}
        if log is None:
            return None
        started = time.time() - (time.monotonic() - self.started)
        steps = reported_steps(log, self.windows, started)
        for step in steps:
            self.writer.step(step)
        return {**kept_trajectory(log), "reported_steps": len(steps)}

    def _tamper(self, graded: bool) -> Any:
        """The tamper evidence of the frozen sandbox (frozen again first when grading did not
        finish: it may have stopped before freezing it, as live mode does after grading)."""
        if not graded:
            with contextlib.suppress(Exception):  # stopped already, or gone: read as it is
                self.sandbox.freeze()
        try:
            harness = self.options.agent_sandbox.harness
            return _evidence.collect(self.sandbox, self.plan, self.laid_out, harness)
        except Exception:  # noqa: BLE001 - evidence is best effort: never a crash of step
            return _evidence.unknown()

    def fail(self, exc: BaseException) -> Outcome:
        """End the episode ungraded because termgym's machinery failed (class "error")."""
        error = describe_error(exc)
        self._end_ungraded(INFRA_ERROR, error)
        return Outcome(
            reward=0.0,
            variant=self.plan.variant,
            rules_enforced=dict(self.plan.rules_enforced),
            verdicts={},
            episode_class=INFRA_ERROR,
            error=error,
            episode_file=_episode_file(self.writer),
            grading_seconds=0.0,
        )

    def abandon(self) -> None:
        """Stop an episode that will not be graded (env closed or reset mid-episode)."""
        if not self.finished:
            self._end_ungraded(
                None, "abandoned: the environment was reset or closed before the end"
            )

    def _end_ungraded(self, episode_class: EndClass | None, error: str) -> None:
        self.finished = True
        if self.writer is not None:
            end = EpisodeEnd(
                reward=0.0, terminated=False, truncated=True, verdicts={},
                episode_class=episode_class, error=error, audit=[], extra={"steps": self.steps},
            )  # fmt: skip
            self.writer.end(end)
            self.writer.close()
        self._give_back()

    def _give_back(self) -> None:
        """The sandbox to the pool, and the verifiers reserved for it and not taken."""
        if self.verifiers is not None:
            self.verifiers.close()
        self.pool.release(self.sandbox)

    def record(self, mode: str, action: str, result: RunResult, stream: bytes) -> None:
        """Count a step, feed the screen, and append the step to the recording."""
        self.steps += 1
        self.screen.feed(stream)
        if self.writer is None:
            return
        ended = time.monotonic() - self.started
        self.windows.append(Window(ended - result.duration, ended))
        self.writer.step(
            StepRecord(
                index=self.steps - 1,
                mode=mode,
                action=action,
                output=result.output,
                exit_code=result.exit_code,
                duration=result.duration,
                timed_out=result.timed_out,
                truncated=result.truncated,
                screen=self.screen.text(),
                raw=stream,
                t=ended,
                restarted=result.restarted,
            )
        )


def episode_class_of(plan: EpisodePlan, report: GradeReport) -> ShadowClass | None:
    """The episode's class: shadow grading's, except on an impossible episode, whose class
    compares what it was told (the stated rule set) with the original rules."""
    if plan.compared == report.own or plan.compared not in report.verdicts:
        return report.episode_class
    original = report.verdicts.get("original")
    if original is None:
        return report.episode_class
    return classify(report.verdicts[STATED].passed, original.passed)


def _episode_file(writer: Recorder | None) -> str | None:
    """The recording's file, when the recorder writes one (EpisodeWriter's JSONL)."""
    path = getattr(writer, "jsonl_path", None)
    return str(path) if path is not None else None
