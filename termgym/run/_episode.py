"""Run one episode of a job: an agent acting in an environment under per-phase timeouts."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from termgym._vocabulary import GRADER_ERROR, IMPOSSIBLE, INFRA_ERROR, EndClass, EpisodeStatus
from termgym.agents import Agent, EpisodeContext, Reference, agent_log_of, ends_episode
from termgym.env import TerminalEnv
from termgym.errors import AgentError, InfrastructureError, SandboxError, TermgymError
from termgym.grading import GradeReport
from termgym.recording import ResultLine
from termgym.run._jobs import Job
from termgym.tasks import TamperEvidence, rule_files

INFRA_ERRORS = (InfrastructureError, SandboxError)
"""What a run retries and sets aside: termgym's machinery failing, never the agent."""


@dataclass(frozen=True)
class EpisodeResult:
    """What came of one job.

    Attributes:
        job: The job.
        status: "ok", "agent-error" or "infra-error" (`termgym._vocabulary.EpisodeStatus`).
        reward: The grader's score (0 unless status is "ok").
        episode_class: adapted / stale / both / neither / grader-error, or None.
        steps: Steps the agent took.
        phases: Seconds spent per phase: "setup", "agent", "grading".
        agent_timed_out: The agent's time ran out and the state was graded as it was.
        error: What went wrong: the agent's exception, why grading failed (grader-error),
            or the infrastructure error.
        attempts: How many attempts the job took.
        episode_file: The episode's recording, when recorded.
        passed: The episode passed its own graders.
        shifted: Its enforced rules differ from the original ones (shadow grading ran).
        conflict_reported: The agent ended it reporting a conflict (REPORT_CONFLICT).
        tampered: Its tamper evidence found something (None: not read).
        weak_isolation: A defence of the verifier did not hold in its grading (the tests
            loaded the agent's code, ...: the final info's `grading.isolation`).
    """

    job: Job
    status: EpisodeStatus
    reward: float = 0.0
    episode_class: EndClass | None = None
    steps: int = 0
    phases: dict[str, float] = field(default_factory=dict)
    agent_timed_out: bool = False
    error: str | None = None
    attempts: int = 1
    episode_file: str | None = None
    passed: bool = False
    shifted: bool = False
    conflict_reported: bool = False
    tampered: bool | None = None
    weak_isolation: bool = False


def _reference(env: TerminalEnv) -> Reference:
    episode = env.episode
    assert episode is not None
    task = env.options.task
    plan = episode.plan
    return Reference(
        oracle_script=plan.solution("oracle"),
        memorized_script=plan.solution("memorized") if task.spec.memorized else "",
        withheld_rules=dict(episode.plan.withheld),
        workdir=task.spec.workdir,
        rule_files=rule_files(task.spec),
        cheater_script=plan.solution("cheater") if task.spec.cheater else "",
        conflict=plan.conflict.describe() if plan.conflict else "",
    )


def run_episode(
    job: Job,
    env: TerminalEnv,
    agent: Agent,
    *,
    agent_timeout: float | None = None,
    on_step: Callable[[Job, int], None] | None = None,
    on_act: Callable[[Job, float], None] | None = None,
) -> EpisodeResult:
    """Reset `env` for the job, let `agent` act until it submits or runs out, grade.

    Infrastructure errors (InfrastructureError, a sandbox that fails) propagate so the
    caller may retry; an agent that raises (in reset or act) gets status "agent-error" and
    its episode is still graded, unless its time had run out by then (a timeout); a final
    state that cannot be graded is a counted grader-error.
    `on_act(job, seconds)` hears how long each of the agent's choices took.
    """
    phases: dict[str, float] = {}
    started = time.monotonic()
    obs, _ = env.reset(
        seed=job.seed,
        options={"variant": job.variant, "seed": job.seed, "episode_id": job.episode_id},
    )
    phases["setup"] = time.monotonic() - started
    limit = (
        agent_timeout if agent_timeout is not None else env.options.task.spec.limits.agent_timeout
    )
    agent_started = time.monotonic()
    deadline = agent_started + limit
    context = EpisodeContext(
        task_id=job.task,
        instruction=obs["instruction"],
        max_steps=env.options.max_steps,
        mode=env.options.mode,
        episode_id=job.episode_id,
        reference=_reference(env) if agent.privileged else None,
        deadline=deadline,
    )
    env.set_deadline(deadline)  # a command still running at the deadline is stopped then
    env.attach_transcript(agent.transcript)
    own_log = agent_log_of(agent)
    if own_log is not None:
        env.attach_agent_log(own_log)
    if context.reference is not None:
        env.attach_reference(context.reference)
    agent_error: str | None = None
    timed_out = False
    steps = 0
    started_agent = False
    while True:
        if started_agent and time.monotonic() >= deadline:  # reset first, even with no time
            timed_out = True  # left (its probe, if asked, needs the episode started)
            result = _time_is_up(env, agent, limit)
            break
        try:
            if not started_agent:  # its start is its time too (Harbor's agents: seconds)
                started_agent = True
                agent.reset(context)
                continue
            began = time.monotonic()
            action = agent.act(obs)
            if on_act is not None:
                on_act(job, time.monotonic() - began)
        except (AgentError, TermgymError, Exception) as exc:  # the agent's fault, not ours
            if isinstance(exc, INFRA_ERRORS):
                raise
            if time.monotonic() >= deadline:  # ended by the time limit (the agent's work
                timed_out = True  # was stopped at the deadline): a timeout, not an error
                result = _time_is_up(env, agent, limit)
                break
            agent_error = f"{type(exc).__name__}: {exc}"
            result = env.stop("agent error")
            break
        if time.monotonic() >= deadline:  # chosen too late: not run
            timed_out = True
            result = _time_is_up(env, agent, limit)
            break
        result = env.step(action)
        obs = result[0]
        if not ends_episode(action):
            steps += 1
            if on_step is not None:
                on_step(job, steps)
        if result[2] or result[3]:
            break
    agent_end = time.monotonic()
    phases["agent"] = agent_end - agent_started
    info = result[4]
    phases["grading"] = float(info.get("grading_duration", 0.0))
    if info.get("class") == INFRA_ERROR:
        raise InfrastructureError(str(info.get("error")))
    grading_error = info.get("error") if info.get("class") == GRADER_ERROR else None
    report = GradeReport.from_wire(
        info.get("verdicts") or {},
        variant=job.variant,
        episode_class=info.get("class"),
        where=f"episode {job.episode_id}: the final info",
    )
    own, original = report.own_verdict, report.verdicts.get("original")
    passed = own.passed if own and own.passed is not None else float(result[1]) >= 1.0
    passed = passed and info.get("class") != GRADER_ERROR  # a failure, its own verdict aside
    shifted = (  # never an impossible episode (docs/metrics.md)
        job.variant != IMPOSSIBLE
        and original is not None
        and original.rules_known
        and _rules_of(original.rules, info) != dict(info.get("rules_enforced") or {})
    )
    return EpisodeResult(
        job=job,
        status="agent-error" if agent_error else "ok",
        reward=float(result[1]),
        episode_class=info.get("class"),
        steps=steps,
        phases=phases,
        agent_timed_out=timed_out,
        error=agent_error or grading_error,
        episode_file=info.get("episode_file"),
        passed=passed,
        shifted=shifted,
        conflict_reported=bool(info.get("conflict")),
        tampered=_tampered(info.get("tamper")),
        weak_isolation=bool((info.get("grading") or {}).get("isolation")),
    )


def _tampered(evidence: Any) -> bool | None:
    found = TamperEvidence.from_dict(evidence)
    return found.tampered if found is not None else None


def _rules_of(rules: Any, info: dict[str, Any]) -> dict[str, Any]:
    """A rule set's values of the episode's rules (its surface values left out)."""
    enforced = info.get("rules_enforced") or {}
    return {k: v for k, v in dict(rules).items() if k in enforced}


def _time_is_up(env: TerminalEnv, agent: Agent, limit: float) -> Any:
    """End an episode whose agent ran out of time: the probe (if asked), then grading as
    it stands."""
    _probe_if_asked(agent)  # the episode ends without the agent's SUBMIT
    return env.stop(f"agent time limit of {limit:g} s")


def _probe_if_asked(agent: Agent) -> None:
    """Ask an agent that takes the disclosure probe (see docs/agents.md) before a forced end."""
    probe = getattr(agent, "probe", None)
    if callable(probe) and getattr(agent, "probe_enabled", False):
        try:
            probe()
        except Exception:  # noqa: BLE001 - the probe is best effort; the episode is graded anyway
            return


def episode_path(out_dir: Path, job: Job) -> Path:
    """Where the recording of a job's episode lives."""
    return out_dir / "episodes" / f"{job.episode_id}.jsonl"


def result_line(result: EpisodeResult) -> ResultLine:
    """The run's results.jsonl line about a result."""
    return ResultLine(
        episode_id=result.job.episode_id,
        task=result.job.task,
        variant=result.job.variant,
        index=result.job.index,
        seed=result.job.seed,
        status=result.status,
        reward=result.reward,
        episode_class=result.episode_class,
        steps=result.steps,
        phases=result.phases,
        agent_timed_out=result.agent_timed_out,
        error=result.error,
        attempts=result.attempts,
    )
