"""TerminalEnv: one termgym task as a Gymnasium environment."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from numbers import Integral
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from termgym._actions import SUBMIT, conflict_reason
from termgym.agents import AgentSandbox, Reference
from termgym.env._async import AsyncEnvMixin
from termgym.env._episode import Episode, EpisodeOptions
from termgym.env._infos import command_info, new_episode_id, no_command_info
from termgym.env._keys import parse_keys
from termgym.env._options import EnvOptions
from termgym.env._pool import PoolLease
from termgym.env._spaces import TerminalText
from termgym.env._time_limit import cuts_after_this_step, enclosing_time_limits
from termgym.errors import ActionError, SandboxCrashed, SandboxError
from termgym.recording import AgentLog, EpisodeHeader, Recorder
from termgym.sandbox import Backend, GatewayMount
from termgym.screen import screen_chars
from termgym.tasks import Task

MAX_ACTION_CHARS = 100_000
MAX_OUTPUT_CHARS = 1_100_000
MAX_INSTRUCTION_CHARS = 200_000


class TerminalEnv(AsyncEnvMixin, gym.Env[dict[str, Any], str]):
    """A terminal task in a real sandbox, graded by hidden graders when the episode ends.

    `areset()`, `astep()`, `astop()` and `aclose()` are the same calls as coroutines that
    do not block an event loop (termgym.env._async).

    Actions are text: a shell command (mode "command") or keystrokes in the notation of
    `termgym.env.parse_keys` (mode "keys"). The action "<submit>" ends the episode and has
    the final state graded; "<report-conflict> REASON" (`termgym.report_conflict(reason)`)
    ends it too, saying the task contradicts itself (graded all the same, the report
    recorded); running out of steps truncates it and grades it all the same.

    The reward is 0 until the episode ends, then the score of the episode's graders. The final
    step's info holds the verdict matrix of shadow grading and the episode's class; no earlier
    observation or info names the variant or a hidden rule value.

    Args:
        task: A task id (bundled or found on TERMGYM_TASKS_PATH) or a loaded task.
        variant: original, contradicted, withheld, swapped, sampled or impossible; or a schedule
            drawing one per episode. `reset(options={"variant": ...})` overrides it.
        backend: Sandbox backend ("docker", "bwrap", "local"); None picks the best available.
            A `termgym.sandbox.Backend` (`Backend.coerce`) is one chosen and checked already.
        mode: "command" or "keys".
        max_steps: Step budget; defaults to the task's limit.
        step_timeout: Seconds a command may run; defaults to the task's agent timeout.
        record_dir: Run folder to record episodes into (None: no recording).
        agent: Name written into recordings.
        shadow: Grade the final state against the other variants' rules as well.
        render_mode: None or "ansi" (the current screen as text).
        pool_size: Warm sandboxes kept ready per configuration (0: cold starts).
        allow_local: Allow the unisolated "local" backend.
        run_id: Id of the run this environment records into.
        runtime: Docker runtime of the sandboxes, e.g. "runsc" for gVisor (docs/security.md);
            None is the engine's default.
        rule_draw: How shifted variants draw their values: a `termgym.tasks.RuleDraw` or a
            mapping of its fields (split "train"/"eval", contradict "drawn"/"fixed",
            rotation: an evaluator's `Rotation`); docs/held-out-values.md. A schedule
            stage's `split` overrides the split for its episodes.
        recorder: Called with each episode's header when it starts, returns the
            `termgym.recording.Recorder` its steps and end go to (a database, a stream, a
            trainer's buffer); record_dir is the same with an `EpisodeWriter` in a run
            folder, so give one or the other.
        weak_isolation: What a verdict pays when a defence of the verifier did not hold in
            its grading (the final info's `grading.isolation`: the tests loaded code of the
            agent's, which could have forged their results; docs/security.md): "pay" (the
            verdict's reward) or "withhold" (0; the verdicts and class stand, and
            `grading.unpaid` holds the reward it would have paid). For training on tasks
            graded on a snapshot, "withhold" leaves no reward to a forgery of that kind.
        agent_sandbox: What the agent declares its sandboxes need (`termgym.agents.
            AgentSandbox`: a layer with its program over the task's image, built once).
        gateway: The model gateway the agent's sandboxes reach at http://127.0.0.1:<port>
            (`termgym.gateway.Gateway.mount`), for agents that run inside the sandbox; the
            backend must declare it (docker, bwrap). None: no gateway.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        task: Any,
        *,
        variant: Any = "original",
        backend: str | Backend | None = None,
        mode: str = "command",
        max_steps: int | None = None,
        step_timeout: float | None = None,
        record_dir: str | Path | None = None,
        agent: str = "unknown",
        shadow: bool = True,
        render_mode: str | None = None,
        pool_size: int = 1,
        allow_local: bool = False,
        run_id: str = "",
        runtime: str | None = None,
        rule_draw: Any = None,
        recorder: Callable[[EpisodeHeader], Recorder] | None = None,
        weak_isolation: str = "pay",
        agent_sandbox: AgentSandbox | None = None,
        gateway: GatewayMount | None = None,
    ) -> None:
        options = EnvOptions.parse(
            backend=backend,
            mode=mode,
            max_steps=max_steps,
            step_timeout=step_timeout,
            record_dir=record_dir,
            agent=agent,
            shadow=shadow,
            render_mode=render_mode,
            pool_size=pool_size,
            allow_local=allow_local,
            run_id=run_id,
            runtime=runtime,
            rule_draw=rule_draw,
            recorder=recorder,
            weak_isolation=weak_isolation,
            agent_sandbox=agent_sandbox,
            gateway=gateway,
        )
        self._setup(task, variant, options)

    @classmethod
    def from_options(
        cls, task: Task | str | Path, options: EnvOptions, *, variant: Any = "original"
    ) -> TerminalEnv:
        """The env of `task` with options parsed already (`EnvOptions.parse`), as the entry
        points that make many envs of one set of options do (MultiTaskEnv, rollout, runs)."""
        env = cls.__new__(cls)
        env._setup(task, variant, options)
        return env

    def _setup(self, task: Any, variant: Any, options: EnvOptions) -> None:
        self.render_mode = options.render_mode
        self.options = EpisodeOptions.build(task, variant, options)
        limit = self.options.max_steps
        self.action_space = TerminalText(MAX_ACTION_CHARS)
        self.observation_space = spaces.Dict(
            {
                "output": TerminalText(MAX_OUTPUT_CHARS),
                "exit_code": spaces.Discrete(257, start=-1),
                "screen": TerminalText(
                    screen_chars(self.options.config.cols, self.options.config.rows)
                ),
                "instruction": TerminalText(MAX_INSTRUCTION_CHARS),
                "step": spaces.Discrete(limit + 1),
            }
        )
        self._episodes_started = 0
        self._steps_taken = 0
        self._episode: Episode | None = None
        self._lease: PoolLease | None = None
        self._warned_ungraded = False
        self._time_limits: tuple[gym.wrappers.TimeLimit, ...] = ()

    @property
    def task_id(self) -> str:
        """The id of the task this environment runs."""
        return self.options.task.id

    @property
    def episode(self) -> Episode | None:
        """The current episode (None before the first reset)."""
        return self._episode

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start a new episode in a fresh sandbox.

        Options: "variant" (a variant name for this episode), "seed" (the episode's rule
        seed, defaults to one drawn from the environment's generator), "episode_id" (names
        the recording; defaults to a fresh unique id).
        """
        super().reset(seed=seed)
        previous = self._episode
        if previous is not None and not previous.finished and previous.steps:
            self._warn_ungraded(previous.steps)
        self._finish_previous()
        self._time_limits = enclosing_time_limits(self)
        options = dict(options or {})
        variant = options.pop("variant", None)
        draw, switched = self.options.draw, dict[str, Any]()
        if not variant:
            variant, draw, switched = self.options.pick(
                self.np_random, self._episodes_started, self._steps_taken
            )
        self._episodes_started += 1
        rule_seed = options.pop("seed", None)
        if rule_seed is None:
            rule_seed = seed if seed is not None else int(self.np_random.integers(2**31 - 1))
        episode_id = options.pop("episode_id", None) or new_episode_id(self.task_id)
        if options:
            raise ValueError(
                f"unknown reset option(s) {sorted(options)}; "
                "expected 'variant', 'seed' or 'episode_id'"
            )
        if isinstance(rule_seed, bool) or not isinstance(rule_seed, Integral):
            raise ValueError(
                "reset option 'seed': expected an int (the seed of the episode's rule values), "
                f"found {rule_seed!r}"
            )
        if self._lease is None:
            o = self.options
            self._lease = PoolLease(o.sandbox_backend, o.pool_size, o.allow_local)
        self._episode = Episode.begin(
            self.options,
            variant=variant,
            seed=int(rule_seed),
            episode_id=episode_id,
            draw=draw,
            switched=switched,
            pool=self._lease.pool,
        )
        obs = self._observation(output="", exit_code=-1)
        return obs, {"episode_id": episode_id, "task_id": self.task_id, "step": 0}

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Run one action; on submit or the last allowed step, grade the final state.

        The last allowed step is the `max_steps`th, or the one after which a Gymnasium
        TimeLimit around this env truncates (found at reset: `termgym.env._time_limit`).
        """
        episode = self._episode
        if episode is None or episode.finished:
            raise gym.error.ResetNeeded("call reset() before step(), and after an episode ends")
        if isinstance(action, np.str_):
            action = str(action)
        if not isinstance(action, str):
            raise ActionError(f"an action is a str (a command or keystrokes), got {action!r}")
        if action.strip() == SUBMIT:
            return self._end(output="", exit_code=-1, terminated=True, info=self._no_command())
        reason = conflict_reason(action)
        if reason is not None:
            return self._end("", -1, terminated=True, info=self._no_command(), conflict=reason)
        keys = parse_keys(action) if self.options.mode == "keys" else None
        self._steps_taken += 1
        try:
            result = episode.keys(action, keys) if keys is not None else episode.command(action)
        except SandboxCrashed as exc:  # the sandbox died under the command: grade what is left
            crashed = {**no_command_info(episode.steps), "sandbox_crashed": str(exc)}
            return self._end("", -1, terminated=False, info=crashed, crash=exc)
        except SandboxError as exc:  # termgym's machinery failed: end it, ungraded
            obs = self._observation("", -1)
            failed = {**no_command_info(episode.steps), **episode.fail(exc).info()}
            return obs, 0.0, False, True, failed
        exit_code = -1 if result.exit_code is None else max(-1, min(255, result.exit_code))
        info = command_info(result, episode.steps)
        if episode.steps >= self.options.max_steps or cuts_after_this_step(self._time_limits):
            return self._end(result.output, exit_code, terminated=False, info=info)
        obs = self._observation(result.output, exit_code)
        return obs, 0.0, False, False, info

    def stop(
        self, reason: str = "time limit"
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """End the episode now as truncated (e.g. the agent's time ran out) and grade it."""
        if self._episode is None or self._episode.finished:
            raise gym.error.ResetNeeded("stop() needs an episode in progress")
        info = {**self._no_command(), "stopped": reason}
        return self._end(output="", exit_code=-1, terminated=False, info=info)

    def attach_transcript(self, transcript: Any) -> None:
        """Give the episode a callable returning the agent's messages, saved at its end."""
        if self._episode is not None:
            self._episode.transcript = transcript

    def attach_agent_log(self, agent_log: Callable[[], AgentLog | None]) -> None:
        """Give the episode a callable returning the agent's own account of it (an ATIF
        trajectory its harness wrote), read at its end: kept in the end line, and its tool
        calls written as steps the agent reported (`reported` lines). Evidence for reading:
        never graded, audited or replayed."""
        if self._episode is not None:
            self._episode.agent_log = agent_log

    def set_deadline(self, deadline: float | None) -> None:
        """End the agent's time at `deadline` (time.monotonic()): from then on no command of
        this episode runs on; one still running is stopped as a timed-out step. The runner
        sets it from the agent's time limit; a reset clears it."""
        if self._episode is not None:
            self._episode.deadline = deadline

    def attach_reference(self, reference: Reference) -> None:
        """Say that a privileged agent was handed `reference` this episode (the runner does):
        the recording keeps what it was told besides the task (the withheld values and the
        rule names its scripts use), which the trace audit counts as shown to it."""
        if self._episode is not None:
            self._episode.reference = {
                "withheld_rules": dict(reference.withheld_rules),
                "rule_names": sorted(self.options.task.rules),
            }

    def render(self) -> str | None:
        """The current terminal screen as text (render_mode "ansi")."""
        if self.render_mode != "ansi":
            return None
        return self._episode.screen_text() if self._episode else ""

    def close(self) -> None:
        """End the current episode (ungraded if unfinished) and stop its sandbox; the last
        env of the process to close also stops the warm sandboxes of its pool."""
        self._finish_previous()
        if self._lease is not None:
            self._lease.release()
            self._lease = None
        super().close()

    def _warn_ungraded(self, steps: int) -> None:
        if self._warned_ungraded:
            return
        self._warned_ungraded = True
        gym.logger.warn(
            f"termgym: an episode of {self.task_id} was reset after {steps} step(s) before it "
            "ended, so it was not graded (reward 0, no verdicts). The env grades an episode "
            f"when it submits, at max_steps (now {self.options.max_steps}) and at the step a "
            "gymnasium TimeLimit around it truncates; a wrapper that ends episodes otherwise "
            "should call env.unwrapped.stop(), which truncates and grades."
        )

    def _end(
        self,
        output: str,
        exit_code: int,
        *,
        terminated: bool,
        info: dict[str, Any],
        crash: SandboxCrashed | None = None,
        conflict: str | None = None,
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        assert self._episode is not None
        outcome = self._episode.finish(submitted=terminated, crash=crash, conflict=conflict)
        info.update(outcome.info())
        obs = self._observation(output, exit_code)
        return obs, outcome.reward, terminated, not terminated, info

    def _no_command(self) -> dict[str, Any]:
        """The step keys of an info whose step ran no command (submit, a conflict report, a
        stop), as every step's info has them (`termgym.env._infos`)."""
        assert self._episode is not None
        return no_command_info(self._episode.steps)

    def _observation(self, output: str, exit_code: int) -> dict[str, Any]:
        episode = self._episode
        assert episode is not None
        return {
            "output": output[:MAX_OUTPUT_CHARS],
            "exit_code": int(exit_code),
            "screen": episode.screen_text(),
            "instruction": episode.instruction[:MAX_INSTRUCTION_CHARS],
            "step": min(episode.steps, self.options.max_steps),
        }

    def _finish_previous(self) -> None:
        if self._episode is not None:
            self._episode.abandon()
            self._episode = None


def make(task: str | Path | Task, **kwargs: Any) -> TerminalEnv:
    """Make the environment of a task id, task folder or loaded task (no Gymnasium wrappers).

    Keyword arguments are TerminalEnv's: variant, backend, mode, max_steps, step_timeout,
    record_dir, agent, shadow, render_mode, pool_size, allow_local, run_id, runtime,
    rule_draw, recorder, weak_isolation, gateway.
    """
    return TerminalEnv(task, **kwargs)
