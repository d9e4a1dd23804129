"""`termgym.rollout`: N episodes of a policy function over tasks and variants, as trajectories.

The policy is a function of the conversation so far and the tools on offer, returning the
model's reply (text, an assistant message dict with tool calls, or an OpenAI message
object); sync or async. Episodes run concurrently from one asyncio loop up to a limit; a
sync policy is called on a worker thread, so a slow one does not hold the loop. Each
episode is recorded as `termgym run` records it (the TUI, reports and `termgym compare`
read the folder), and its trajectory is appended to `<record_dir>/trajectories.jsonl`.
"""

from __future__ import annotations

import asyncio
import inspect
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from termgym._version import __version__
from termgym._vocabulary import INFRA_ERROR, EpisodeStatus, Variant, describe_error
from termgym.chat import ChatEnv, Message, ObservationBudget, grading_metadata
from termgym.env import EnvOptions, TaskSource, TerminalEnv, resolve_task_set, run_blocking
from termgym.errors import ImageBuildFailed, InfrastructureError, RecordingError, SandboxError
from termgym.recording import CALLS_SUFFIX, ResultLine, append_result, write_run_header
from termgym.run._jobs import Job, plan_task_set
from termgym.run._trajectory import Trajectory, save_trajectories

Reply = str | Message | Any
Policy = Callable[[list[Message], list[dict[str, Any]]], Reply | Awaitable[Reply]]
"""policy(messages, tools) -> the model's reply (or an awaitable of it)."""

TRAJECTORIES_FILE = "trajectories.jsonl"


def rollout(policy: Policy, tasks: TaskSource = "*", **options: Any) -> list[Trajectory]:
    """Run episodes of `policy` and return their trajectories (see `arollout` for options).

    Raises:
        RuntimeError: called from a running event loop (use `await termgym.arollout(...)`).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(arollout(policy, tasks, **options))
    raise RuntimeError(
        "termgym.rollout() was called inside a running event loop; use "
        "`await termgym.arollout(...)` there"
    )


async def arollout(
    policy: Policy,
    tasks: TaskSource = "*",
    *,
    variants: Sequence[Variant] = ("original",),
    episodes: int = 1,
    concurrency: int = 8,
    seed: int = 0,
    record_dir: str | Path | None = None,
    budget: ObservationBudget | None = None,
    system_prompt: str | None = "",
    max_turns: int | None = None,
    retries: int = 1,
    agent: str = "rollout",
    **env_options: Any,
) -> list[Trajectory]:
    """Run `episodes` episodes per (task, variant) of `policy`, `concurrency` at a time.

    Args:
        policy: policy(messages, tools) -> reply, sync or async (see `Policy`).
        tasks: A task set (`termgym.env.MultiTaskEnv` accepts the same: ids, globs, folders).
        variants: Variants to run; each task runs those it offers.
        episodes: Episodes per (task, variant) pair.
        concurrency: Episodes under way at once.
        seed: The rollout's seed; each episode's seed derives from it and its place.
        record_dir: Run folder for recordings, results.jsonl, run.json and trajectories.jsonl.
        budget: Observation budget of the chat adapter (default 8000 characters).
        system_prompt: The chat adapter's system prompt ("" the default one, None none).
        max_turns: Replies per episode (default: the task's step budget).
        retries: Extra attempts of an episode whose infrastructure failed.
        agent: The name written into recordings.
        **env_options: TerminalEnv options: backend, mode, max_steps, step_timeout, shadow,
            pool_size, allow_local, runtime.

    Returns:
        One trajectory per episode, in plan order (task, variant, index).
    """
    if not callable(policy):
        raise TypeError(
            f"policy: expected a function policy(messages, tools) -> reply, got {policy!r}"
        )
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries: expected an int >= 0, got {retries!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency: expected a positive int, got {concurrency!r}")
    for name in ("variant", "record_dir", "agent", "run_id"):
        if name in env_options:
            raise ValueError(f"{name!r} is set by rollout itself; pass variants=/record_dir=")
    folder = Path(record_dir) if record_dir is not None else None
    if folder is not None:
        env_options.update(record_dir=folder, run_id=folder.name)
    # parsed once, here, not by each episode's env (where a bad option, an unknown backend
    # among them, was retried as an infrastructure error); the backend is chosen once too
    options = EnvOptions.parse("rollout", agent=agent, **env_options)
    options = options.model_copy(update={"backend": options.chosen_backend()})
    task_set = resolve_task_set(tasks)
    jobs = plan_task_set(task_set, variants, episodes, seed)
    by_id = {t.id: t for t in task_set}
    if folder is not None:
        there = [
            j.episode_id for j in jobs if (folder / "episodes" / f"{j.episode_id}.jsonl").exists()
        ]
        if there:  # before run.json is written over: the recorder would refuse each episode
            raise RecordingError(
                f"{folder} already holds episodes of this plan ({', '.join(there[:3])}"
                f"{', ...' if len(there) > 3 else ''}); expected a new record_dir for a rollout"
            )
        (folder / "episodes").mkdir(parents=True, exist_ok=True)
        _write_header(folder, agent, [t.id for t in task_set], variants, episodes, seed, jobs)
    chat_options = {"budget": budget, "system_prompt": system_prompt, "max_turns": max_turns}
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Job) -> Trajectory:
        async with gate:
            trajectory = await _attempts(policy, job, by_id[job.task], options,
                                         chat_options, retries, folder)  # fmt: skip
        if folder is not None:
            save_trajectories([trajectory], folder / TRAJECTORIES_FILE)
            _append_result(folder, trajectory)
        return trajectory

    return list(await asyncio.gather(*(one(job) for job in jobs)))


async def _attempts(
    policy: Policy,
    job: Job,
    task: Any,
    options: EnvOptions,
    chat_options: dict[str, Any],
    retries: int,
    folder: Path | None,
) -> Trajectory:
    error = ""
    attempt = 0
    for attempt in range(1, retries + 2):
        final = False
        try:
            trajectory = await _episode(policy, job, task, options, chat_options)
        except (InfrastructureError, SandboxError) as exc:
            error = describe_error(exc)
            final = isinstance(exc, ImageBuildFailed)  # its own step failed: the same again
        else:
            if trajectory.status != "infra-error":
                return replace(trajectory, attempts=attempt)
            error = trajectory.error or "infrastructure error"
        if folder is not None:
            _set_aside(folder, job, attempt)
        if final:
            break
    return Trajectory(job.episode_id, job.task, job.variant, job.seed, job.index,
                      status="infra-error", error=error, attempts=attempt,
                      episode_class=INFRA_ERROR, truncated=True)  # fmt: skip


async def _episode(
    policy: Policy,
    job: Job,
    task: Any,
    options: EnvOptions,
    chat_options: dict[str, Any],
) -> Trajectory:
    started = time.monotonic()
    env = await run_blocking(TerminalEnv.from_options, task, options)
    chat = ChatEnv(env, **chat_options)
    try:
        messages, _ = await chat.areset(
            seed=job.seed,
            options={"variant": job.variant, "seed": job.seed, "episode_id": job.episode_id},
        )
        actions: list[str | None] = []
        rewards: list[float] = []
        status: EpisodeStatus = "ok"
        policy_error: str | None = None
        result: tuple[Any, ...] = ([], 0.0, False, False, {})
        while not chat.done:
            try:
                reply = await _ask(policy, list(chat.messages), chat.tools)
            except Exception as exc:  # noqa: BLE001 - the policy's failure is data, not a crash
                status, policy_error = "agent-error", describe_error(exc)
                result = await env.astop("policy error")
                chat.done = True
                rewards.append(float(result[1]))
                actions.append(None)
                break
            result = await chat.astep(reply)
            actions.append(result[4].get("action"))
            rewards.append(float(result[1]))
        info = dict(result[4])
        info.setdefault("task_id", job.task)
        if info.get("class") == INFRA_ERROR:
            status = "infra-error"
        return Trajectory(
            episode_id=job.episode_id,
            task=job.task,
            variant=job.variant,
            seed=job.seed,
            index=job.index,
            messages=tuple(dict(m) for m in chat.messages),
            actions=tuple(actions),
            rewards=tuple(rewards),
            reward=float(result[1]),
            terminated=bool(result[2]),
            truncated=bool(result[3]),
            episode_class=info.get("class"),
            verdicts=grading_metadata(info)["verdicts"],
            metadata=grading_metadata(info),
            status=status,
            error=policy_error or info.get("error"),
            episode_file=info.get("episode_file"),
            steps=env.episode.steps if env.episode is not None else 0,
            seconds=time.monotonic() - started,
        )
    finally:
        await env.aclose()


async def _ask(policy: Policy, messages: list[Message], tools: list[dict[str, Any]]) -> Reply:
    if inspect.iscoroutinefunction(policy):
        return await policy(messages, tools)
    reply = await run_blocking(policy, messages, tools)
    if inspect.isawaitable(reply):
        reply = await reply
    return reply


def _set_aside(folder: Path, job: Job, attempt: int) -> None:
    """Move a failed attempt's recording to episodes/failed/, as `termgym run` does."""
    for suffix in (".jsonl", ".cast", CALLS_SUFFIX):
        source = folder / "episodes" / f"{job.episode_id}{suffix}"
        if source.exists():
            failed = folder / "episodes" / "failed"
            failed.mkdir(exist_ok=True)
            shutil.move(str(source), failed / f"{job.episode_id}.attempt{attempt}{suffix}")


def _write_header(
    folder: Path,
    agent: str,
    tasks: list[str],
    variants: Sequence[Variant],
    episodes: int,
    seed: int,
    jobs: list[Job],
) -> None:
    header = {
        "run_id": folder.name,
        "agent": agent,
        "agent_options": {},
        "tasks": tasks,
        "variants": list(variants),
        "episodes": episodes,
        "seed": seed,
        "total_episodes": len(jobs),
        "termgym": __version__,
        "started": time.time(),
        "source": "termgym.rollout",
    }
    write_run_header(folder, header)


def _append_result(folder: Path, trajectory: Trajectory) -> None:
    """One results.jsonl line, as the runner writes it (reports read the status from it)."""
    line = ResultLine(
        episode_id=trajectory.episode_id,
        task=trajectory.task,
        variant=trajectory.variant,
        index=trajectory.index,
        seed=trajectory.seed,
        status=trajectory.status,
        reward=trajectory.reward,
        episode_class=trajectory.episode_class,
        steps=trajectory.steps,
        error=trajectory.error,
        attempts=trajectory.attempts,
    )
    append_result(folder, line)
