"""MultiTaskEnv: one Gymnasium environment over a set of tasks, a task drawn per episode."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from termgym._vocabulary import TERMINAL
from termgym.env._async import AsyncEnvMixin
from termgym.env._env import MAX_ACTION_CHARS, MAX_INSTRUCTION_CHARS, MAX_OUTPUT_CHARS, TerminalEnv
from termgym.env._episode import Episode, EpisodeOptions
from termgym.env._infos import new_episode_id
from termgym.env._options import EnvOptions
from termgym.env._schedule import VariantSchedule
from termgym.env._spaces import TerminalText
from termgym.env._task_set import TaskSchedule, TaskSource, resolve_task_set
from termgym.tasks import Task

RESET_OPTIONS = ("task", "variant", "seed", "episode_id")


ENV_OPTIONS = tuple(EnvOptions.model_fields)
"""The TerminalEnv options a MultiTaskEnv passes on to each task's env (`EnvOptions`)."""


class MultiTaskEnv(AsyncEnvMixin, gym.Env[dict[str, Any], str]):
    """Many tasks behind one environment: each reset draws a task, then a variant.

    The task comes from `task_schedule` and the variant from `variant` (a name, a mix or a
    curriculum, as for TerminalEnv), both drawn in `reset()` with the environment's own
    generator, so they hold under vector envs' autoreset and repeat with `reset(seed=...)`.
    Observations, actions, rewards and infos are TerminalEnv's; the spaces are wide enough
    for every task in the set (the `step` space counts to the largest step budget). Each
    task's TerminalEnv is made on its first episode and kept.

    Args:
        tasks: The task set: a folder, a glob over registered ids ("*"), a list of ids,
            folders and tasks, or an iterable a benchmark importer returns.
        task_schedule: "uniform" (default), "cycle", a {task_id: weight} mix, or stages.
        variant: The variant schedule; every task must offer every variant it can draw.
        **env_options: TerminalEnv's other options (backend, mode, max_steps, step_timeout,
            record_dir, agent, shadow, render_mode, pool_size, allow_local, run_id, runtime,
            weak_isolation, ...: `EnvOptions`), parsed once here and handed to each task's
            env.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        tasks: TaskSource = "*",
        *,
        task_schedule: Any = "uniform",
        variant: Any = "original",
        **env_options: Any,
    ) -> None:
        self._options = EnvOptions.parse("MultiTaskEnv", **env_options)
        self.tasks: tuple[Task, ...] = resolve_task_set(tasks)
        self.task_ids = [task.id for task in self.tasks]
        self.task_schedule = TaskSchedule.coerce(task_schedule, self.task_ids)
        self.variant_schedule = VariantSchedule.coerce(variant)
        for task in self.tasks:
            missing = [v for v in self.variant_schedule.variants() if v not in task.spec.variants]
            if missing:
                raise ValueError(
                    f"task {task.id!r} does not offer the variant(s) {missing} the schedule "
                    f"can draw; it offers {list(task.spec.variants)}. Expected every task of "
                    "the set to offer every variant: leave it out, or narrow the schedule."
                )
        self.render_mode = self._options.render_mode
        max_steps = self._options.max_steps
        budgets = [int(max_steps or task.spec.limits.max_steps) for task in self.tasks]
        self.max_steps = max(budgets)
        self.action_space = TerminalText(MAX_ACTION_CHARS)
        self.observation_space = spaces.Dict(
            {
                "output": TerminalText(MAX_OUTPUT_CHARS),
                "exit_code": spaces.Discrete(257, start=-1),
                "screen": TerminalText(TERMINAL.rows * (TERMINAL.cols + 1)),
                "instruction": TerminalText(MAX_INSTRUCTION_CHARS),
                "step": spaces.Discrete(self.max_steps + 1),
            }
        )
        self._envs: dict[str, TerminalEnv] = {}
        self._current: TerminalEnv | None = None
        self._episodes_started = 0

    @property
    def current(self) -> TerminalEnv | None:
        """The TerminalEnv of the episode under way (None before the first reset)."""
        return self._current

    @property
    def task_id(self) -> str:
        """The id of the current episode's task."""
        return self._require_current().task_id

    @property
    def options(self) -> EpisodeOptions:
        """The current task's episode options (its step budget, mode, task)."""
        return self._require_current().options

    @property
    def episode(self) -> Episode | None:
        """The current episode (None before the first reset)."""
        return self._current.episode if self._current is not None else None

    def env_for(self, task_id: str) -> TerminalEnv:
        """The TerminalEnv of one task of the set (made on first use)."""
        env = self._envs.get(task_id)
        if env is None:
            if task_id not in self.task_ids:
                raise ValueError(
                    f"task {task_id!r} is not in this environment's task set "
                    f"({', '.join(self.task_ids)})"
                )
            task = self.tasks[self.task_ids.index(task_id)]
            env = self._envs[task_id] = TerminalEnv.from_options(task, self._options)
        return env

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode of a drawn task and variant in a fresh sandbox.

        Options: "task" (this episode's task id), "variant", "seed" (the rule seed),
        "episode_id"; anything else is an error that lists these.
        """
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; expected one of {RESET_OPTIONS}")
        index = self._episodes_started
        self._episodes_started += 1
        task_id = options.get("task") or self.task_schedule.draw(self.np_random, index)
        env = self.env_for(str(task_id))
        variant = options.get("variant") or self.variant_schedule.draw(self.np_random, index)
        if variant not in env.options.task.spec.variants:
            raise ValueError(
                f"task {task_id!r} offers the variants {list(env.options.task.spec.variants)}; "
                f"got {variant!r}"
            )
        rule_seed = options.get("seed")
        if rule_seed is None:
            rule_seed = seed if seed is not None else int(self.np_random.integers(2**31 - 1))
        episode_id = options.get("episode_id") or new_episode_id(str(task_id))
        if self._current is not None and self._current is not env:
            self._current.close()  # an unfinished episode of another task is abandoned
        self._current = env
        inner_seed = int(self.np_random.integers(2**31 - 1))
        obs, info = env.reset(
            seed=inner_seed,
            options={"variant": variant, "seed": int(rule_seed), "episode_id": episode_id},
        )
        return obs, info

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Run one action in the current task's episode (TerminalEnv.step)."""
        obs, reward, terminated, truncated, info = self._require_current().step(action)
        info.setdefault("task_id", self.task_id)
        return obs, reward, terminated, truncated, info

    def stop(
        self, reason: str = "time limit"
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """End the current episode now as truncated and grade it (TerminalEnv.stop)."""
        return self._require_current().stop(reason)

    def attach_transcript(self, transcript: Any) -> None:
        """Give the current episode a callable returning the agent's messages."""
        self._require_current().attach_transcript(transcript)

    def attach_reference(self, reference: Any) -> None:
        """`TerminalEnv.attach_reference` of the current task's environment."""
        self._require_current().attach_reference(reference)

    def render(self) -> str | None:
        """The current terminal screen (render_mode "ansi")."""
        if self.render_mode != "ansi":
            return None
        return self._current.render() if self._current is not None else ""

    def close(self) -> None:
        """Close every task's environment (an unfinished episode is not graded)."""
        for env in self._envs.values():
            env.close()
        self._current = None
        super().close()

    def _require_current(self) -> TerminalEnv:
        if self._current is None:
            raise gym.error.ResetNeeded("call reset() before using the multi-task environment")
        return self._current
