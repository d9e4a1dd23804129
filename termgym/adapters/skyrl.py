"""termgym as a SkyRL-gym environment: `BaseTextEnv` over the chat adapter.

    pip install 'termgym[skyrl]'
    from termgym.adapters import skyrl as termgym_skyrl
    termgym_skyrl.register()                          # skyrl_gym.make("termgym", ...)
    rows = termgym_skyrl.dataset_rows("*", variants=["original", "contradicted"], episodes=4)

SkyRL's generator makes one environment per trajectory with `skyrl_gym.make(env_class,
env_config=..., extras=row_extras)`, calls `init(prompt)`, then `step(model_output)` until
`done`, then `get_metrics()` and `close()`. The episode's task, variant and seed come from
the dataset row (its extras), the rest from `env_config` (SkyRL's
`environment.skyrl_gym.<env_class>`). The reward is the episode's score on the last step (0
before); the variant, class and verdicts ride in the last step's `metadata` and in
`get_metrics()`, never in an observation.

The turn budget is the task's step budget. SkyRL's generator puts its `generator.max_turns`
in the extras, default 1, meant for single-turn environments: that default is not taken
(it would end every episode after one command), with a warning; a larger value is a cap,
warned about when it is below the task's budget; `env_config.max_turns` sets termgym's own.
An episode the generator ends before `done` (its `max_input_length`) is graded as its
final state stands, in `get_metrics()` or `close()`, whichever comes first.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "termgym.adapters.skyrl needs SkyRL-gym: pip install 'termgym[skyrl]'"
    ) from exc

from termgym.adapters._metrics import aggregate, episode_metrics
from termgym.chat import ChatEnv, ObservationBudget
from termgym.env import MultiTaskEnv, new_episode_id, resolve_task_set
from termgym.run import plan_task_set

ENV_ID = "termgym"
ENV_OPTIONS = (
    "backend",
    "mode",
    "max_steps",
    "step_timeout",
    "record_dir",
    "shadow",
    "pool_size",
    "runtime",
    "weak_isolation",
)
ENV_CONFIG_KEYS = (
    "tasks",
    "task_schedule",
    "variant",
    *ENV_OPTIONS,
    "max_output_chars",
    "system_prompt",
    "max_turns",
)
SKYRL_DEFAULT_TURNS = 1
"""SkyRL's `generator.max_turns` default, meant for single-turn environments."""


class TermgymTextEnv(BaseTextEnv):  # type: ignore[misc]
    """One termgym episode per instance, text in, OpenAI-style messages out.

    Args:
        env_config: Defaults for every episode (a mapping or an OmegaConf config): tasks
            (the task set, default "*"), task_schedule, variant (a schedule), backend, mode,
            max_steps, step_timeout, record_dir, shadow, pool_size, runtime,
            weak_isolation ("withhold" pays 0 for a verdict the agent's code could have
            forged: TerminalEnv's option), max_output_chars (the observation budget,
            default 8000), system_prompt, max_turns (replies per episode; default: the
            task's step budget).
        extras: The dataset row's extras: task, variant, seed (this episode's), max_turns
            (set by SkyRL's generator from generator.max_turns; see the module docstring).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config = _plain(env_config)
        unknown = sorted(set(config) - set(ENV_CONFIG_KEYS))
        if unknown:
            raise ValueError(
                f"termgym env_config: unknown key(s) {unknown}; expected {ENV_CONFIG_KEYS}"
            )
        self.extras = _plain(extras)
        env_options = {k: config[k] for k in ENV_OPTIONS if k in config}
        if env_options.get("record_dir"):
            env_options["run_id"] = str(env_options["record_dir"]).rstrip("/").rsplit("/", 1)[-1]
        self._env = MultiTaskEnv(
            config.get("tasks", "*"),
            task_schedule=config.get("task_schedule", "uniform"),
            variant=config.get("variant", "original"),
            agent="skyrl",
            **env_options,
        )
        self._own_turns = int(config["max_turns"]) if config.get("max_turns") else None
        self.chat = ChatEnv(
            self._env,
            budget=ObservationBudget(max_chars=int(config.get("max_output_chars", 8000))),
            system_prompt=config.get("system_prompt", ""),
            tools=False,  # SkyRL feeds text to the model's chat template and passes no tools
        )
        self._final: dict[str, Any] = {}

    def init(self, prompt: Sequence[Mapping[str, Any]] | None = None) -> tuple[list, dict]:
        """Start the episode; the first prompt is the episode's own instruction.

        The dataset row's prompt cannot know the episode's rendered instruction (it depends
        on the variant), so its user messages are replaced; a system message it holds is
        kept in place of termgym's.
        """
        options: dict[str, Any] = {}
        for key in ("task", "variant", "seed", "episode_id"):
            if self.extras.get(key) is not None:
                options[key] = self.extras[key]
        if "episode_id" in options:  # one episode per rollout of the row (a GRPO group)
            options["episode_id"] = new_episode_id(str(options["episode_id"]), planned=True)
        seed = options.get("seed")
        self.chat.max_turns = None
        messages, info = self.chat.reset(
            seed=int(seed) if seed is not None else None, options=options
        )
        self.chat.max_turns = self._turn_budget(self.chat.max_steps)
        self.max_turns = self.chat.max_turns
        system = [dict(m) for m in prompt or () if m.get("role") == "system"]
        if system:
            messages = system + [m for m in messages if m["role"] != "system"]
            self.chat.messages[:] = list(messages)
        return messages, {"task_id": info.get("task_id"), "episode_id": info.get("episode_id")}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Act on the model's output; the last step carries the reward and the verdicts."""
        self.turns += 1
        messages, reward, terminated, truncated, info = self.chat.step(action)
        done = bool(terminated or truncated)
        metadata: dict[str, Any] = {
            "turn": info.get("turn"),
            "action": info.get("action"),
            "parse_error": info.get("parse_error"),
        }
        if done:
            self._final = self.chat.metadata()
            metadata.update(self._final)
        observations = [_as_user(m) for m in messages] if not done else []
        return BaseTextEnvStepOutput(
            observations=observations, reward=float(reward), done=done, metadata=metadata
        )

    def get_metrics(self) -> dict[str, Any]:
        """Per-episode metrics: task, variant, class, reward, passed, rules_changed, stale,
        adapted, grader_error, infra_error, error, turns. An episode the generator ended
        before `done` is graded first, as its final state stands."""
        self._grade_if_cut()
        return episode_metrics(self._final, turns=self.turns)

    @staticmethod
    def aggregate_metrics(metrics: list[dict[str, Any]]) -> dict[str, Any]:
        """Rates over episodes, each as `termgym.analysis` defines it (the report's numbers):
        pass_rate, pass_rate/<variant>, adaptation_rate, stale_rate, memorization_index,
        drop, withheld_hit_rate, reward, grader_error_rate; infrastructure errors are left
        out and counted as infra_errors. A rate without episodes to count is left out."""
        return aggregate(metrics)

    def close(self) -> None:
        """Grade an episode the generator left unfinished, then stop its sandbox."""
        try:
            self._grade_if_cut()
        finally:
            self.chat.close()

    def _grade_if_cut(self) -> None:
        if self.chat.stop("the generator ended the rollout") is not None:
            self._final = self.chat.metadata()

    def _turn_budget(self, steps: int) -> int:
        """Replies this episode may take: termgym's max_turns, else the task's step budget,
        capped by the generator's max_turns unless that is SkyRL's single-turn default."""
        if self._own_turns:
            return self._own_turns
        generator = int(self.extras.get("max_turns") or 0)
        if generator == SKYRL_DEFAULT_TURNS and steps > 1:
            _warn_once(
                f"termgym: SkyRL's generator.max_turns is {SKYRL_DEFAULT_TURNS} (its single-turn "
                f"default), which would end every episode after one command; the task's step "
                f"budget ({steps}) is used instead. Set generator.max_turns to cap the turns, "
                "or max_turns in termgym's env_config."
            )
            return steps
        if 0 < generator < steps:
            _warn_once(
                f"termgym: generator.max_turns={generator} is below the task's step budget "
                f"({steps}): episodes end after {generator} replies and are graded as they "
                "stand."
            )
            return generator
        return steps


def register(env_id: str = ENV_ID) -> str:
    """Register TermgymTextEnv with SkyRL-gym's registry under `env_id` (idempotent)."""
    if env_id not in skyrl_gym.registry:
        skyrl_gym.register(id=env_id, entry_point=f"{__name__}:TermgymTextEnv")
    return env_id


def dataset_rows(
    tasks: Any = "*",
    *,
    variants: Sequence[str] = ("original",),
    episodes: int = 1,
    seed: int = 0,
    env_class: str = ENV_ID,
) -> list[dict[str, Any]]:
    """Dataset rows for SkyRL (`prompt`, `env_class` and the extras of each episode).

    One row per (task, variant, index), each task with the variants it offers. The prompt
    is a placeholder the environment replaces with the rendered instruction; the variant
    lies in the row, which the trainer reads and the model does not.
    """
    task_set = resolve_task_set(tasks)
    return [
        {
            "prompt": [{"role": "user", "content": f"termgym task {job.task}"}],
            "env_class": env_class,
            "task": job.task,
            "variant": job.variant,
            "seed": job.seed,
            "episode_id": f"{job.episode_id}--s{seed}",
        }
        for job in plan_task_set(task_set, variants, episodes, seed)
    ]


def _warn_once(message: str) -> None:
    """Warn; Python's default filter shows a message once per place, not per episode."""
    warnings.warn(message, UserWarning, stacklevel=3)


def _as_user(message: Mapping[str, Any]) -> dict[str, str]:
    """SkyRL feeds observations to a text model's chat template: role user, content text."""
    return {"role": "user", "content": str(message.get("content", ""))}


def _plain(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    try:  # an OmegaConf DictConfig, as SkyRL passes env_config
        from omegaconf import DictConfig, OmegaConf

        if isinstance(value, DictConfig):
            return dict(OmegaConf.to_container(value, resolve=True))  # type: ignore[arg-type]
    except ImportError:  # pragma: no cover - omegaconf comes with skyrl-gym
        pass
    return dict(value)
