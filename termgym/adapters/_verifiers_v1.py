"""termgym in verifiers' v1 API (verifiers 0.4): a taskset of episodes, stepped host-side.

    vf-eval termgym_verifiers --env.taskset.tasks '*' \\
        --env.taskset.variants original,contradicted --env.taskset.episodes 4 \\
        --env.taskset.backend bwrap --model M --client.base-url URL

A v1 environment is a taskset plus the agents that play it. Each task of
`TermgymTaskset` is one episode (task folder, variant, seed in its `info`, which the
trainer reads and the model does not; the prompt is left empty, as the rendered
instruction depends on the episode). `TermgymEnv.run` starts the episode in termgym's
sandbox and plays the agent turn by turn, as verifiers' own TextArena environment plays a
game: the episode's opening message is the first user turn, each reply is read by the
shared parser (a fenced block, SUBMIT, or a `<tool_call>` written as text: the agent's
harness offers no tools, so the model is never told to call one) and run in the sandbox,
and its output is the next user turn. The episode ends when the model submits or the turns
run out; one the rollout ends first is graded as its final state stands. The reward
("termgym") is the episode's score; stale, adapted, passed_original and grader_error are
metrics; the trace's `info["termgym"]` holds `grading_metadata`.

The agent's default harness is verifiers' `null` (a plain chat loop, no tools) in the
`subprocess` runtime: it only talks to the model, and every command runs in termgym's
sandbox, never where the harness runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf

from termgym.chat import ChatEnv, ObservationBudget, system_prompt
from termgym.env import TerminalEnv, new_episode_id, resolve_task_set, run_blocking
from termgym.run import plan_task_set

METRICS = ("stale", "adapted", "passed_original", "grader_error")
"""Per-episode metrics recorded on each trace (1.0 or 0.0)."""


class TermgymTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]
    """The episodes: `tasks` (comma-separated task ids, globs or folders), `variants`
    (comma-separated), `episodes` per (task, variant), `seed`; and the episodes' options."""

    tasks: str = "*"
    variants: str = "original"
    episodes: int = 1
    seed: int = 0
    backend: str | None = None
    mode: str = "command"
    max_steps: int | None = None
    record_dir: str | None = None
    shadow: bool = True
    weak_isolation: str = "pay"
    max_output_chars: int = 8000
    max_turns: int | None = None


class TermgymData(vf.TaskData):  # type: ignore[misc]
    """One episode: the task folder, task id, variant, seed and episode id in `info`."""

    info: dict[str, Any]


class TermgymTask(vf.Task[TermgymData, vf.State, vf.TaskConfig]):  # type: ignore[misc]
    """A termgym episode as a verifiers task (graded by termgym, in `TermgymEnv.run`)."""


class TermgymEnvConfig(vf.EnvConfig):  # type: ignore[misc]
    """The one agent; by default verifiers' null harness (no tools) on the local runtime."""

    agent: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime={"type": "subprocess"})


class TermgymTaskset(vf.Taskset[TermgymTask, TermgymTasksetConfig]):  # type: ignore[misc]
    """One task per (task, variant, index), each task with the variants it offers."""

    def load(self) -> Iterator[TermgymTask]:
        """The episodes, planned as `termgym run` plans them."""
        config = self.config
        task_set = resolve_task_set(_split(config.tasks))
        by_id = {t.id: t for t in task_set}
        for job in plan_task_set(task_set, _split(config.variants), config.episodes, config.seed):
            task = by_id[job.task]
            steps = config.max_steps or task.spec.limits.max_steps
            data = TermgymData(
                name=job.episode_id,
                prompt=None,  # the episode's own opening message opens the exchange
                system_prompt=system_prompt(config.mode, tools=False).format(max_steps=steps),
                info={
                    "task_dir": str(task.root.resolve()),
                    "task_id": job.task,
                    "variant": job.variant,
                    "seed": job.seed,
                    "episode_id": f"{job.episode_id}--s{config.seed}",
                },
            )
            yield TermgymTask(data, config.task)


class TermgymEnv(vf.Env[TermgymEnvConfig]):  # type: ignore[misc]
    """Plays each episode: the model's replies are actions in termgym's sandbox."""

    async def run(self, task: TermgymTask, agents: Any) -> None:
        """One episode, graded by termgym's clean verifier; its score is the reward."""
        config: TermgymTasksetConfig = self.taskset.config
        info = task.data.info
        options: dict[str, Any] = {
            "backend": config.backend,
            "mode": config.mode,
            "shadow": config.shadow,
            "weak_isolation": config.weak_isolation,
        }
        if config.max_steps:
            options["max_steps"] = config.max_steps
        if config.record_dir:
            options.update(record_dir=config.record_dir, run_id=_name(config.record_dir))
        env = await run_blocking(TerminalEnv, info["task_dir"], agent="verifiers", **options)
        chat = ChatEnv(
            env,
            budget=ObservationBudget(max_chars=config.max_output_chars),
            system_prompt=None,  # the task's system prompt is the harness's
            max_turns=config.max_turns,
            tools=False,
        )
        try:
            opening, _ = await chat.areset(
                seed=int(info["seed"]),
                options={
                    "variant": info["variant"],
                    "seed": int(info["seed"]),
                    # one episode per rollout: the task's id with a token of its own
                    "episode_id": new_episode_id(info["episode_id"], planned=True),
                },
            )
            async with agents.agent.interaction(task) as interaction:
                segment = await interaction.turn(str(opening[-1]["content"]))
                while not segment.terminated:
                    new, _, terminated, truncated, _ = await chat.astep(segment.last_reply)
                    if terminated or truncated:
                        break
                    segment = await interaction.turn(_text(new))
                await chat.astop("rollout ended")  # a rollout that ended first is graded
                _record(interaction.trace, chat.metadata())
        finally:
            await chat.aclose()


def _record(trace: Any, meta: dict[str, Any]) -> None:
    trace.record_reward("termgym", float(meta.get("reward") or 0.0), 1.0)
    for name in METRICS:
        trace.record_metric(name, float(bool(meta.get(name))))
    trace.info["termgym"] = meta


def _text(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(str(m.get("content") or "") for m in messages)


def _split(value: str) -> list[str]:
    return [part.strip() for part in str(value).split(",") if part.strip()]


def _name(path: str) -> str:
    return str(path).rstrip("/").rsplit("/", 1)[-1]
