"""termgym as a SkyRL-gym environment: `BaseTextEnv` over the chat adapter.

    pip install 'termgym[skyrl]'
    from termgym.adapters import skyrl as termgym_skyrl
    termgym_skyrl.register()                          # skyrl_gym.make("termgym", ...)
    rows = termgym_skyrl.dataset_rows("*", variants=["original", "contradicted"], episodes=4)

SkyRL's generator makes one environment per trajectory with `skyrl_gym.make(env_class,
env_config=..., extras=row_extras)`, calls `init(prompt)`, then `step(model_output)` until
`done`, then `get_metrics()` and `close()`. The episode's task, variant and seed come from
the dataset row (its extras), the rest from `env_config`. The reward is the episode's score
on the last step (0 before); the variant, class and verdicts ride in the last step's
`metadata` and in `get_metrics()`, never in an observation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "termgym.adapters.skyrl needs SkyRL-gym: pip install 'termgym[skyrl]'"
    ) from exc

from termgym._vocabulary import INFRA_ERROR
from termgym.chat import ChatEnv, ObservationBudget
from termgym.env._multi import MultiTaskEnv
from termgym.env._task_set import resolve_task_set
from termgym.run._jobs import plan_jobs

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
)
ENV_CONFIG_KEYS = (
    "tasks",
    "task_schedule",
    "variant",
    *ENV_OPTIONS,
    "max_output_chars",
    "system_prompt",
)


class TermgymTextEnv(BaseTextEnv):  # type: ignore[misc]
    """One termgym episode per instance, text in, OpenAI-style messages out.

    Args:
        env_config: Defaults for every episode (a mapping or an OmegaConf config): tasks
            (the task set, default "*"), task_schedule, variant (a schedule), backend, mode,
            max_steps, step_timeout, record_dir, shadow, pool_size, runtime,
            max_output_chars (the observation budget, default 8000), system_prompt.
        extras: The dataset row's extras: task, variant, seed (this episode's), max_turns
            (set by SkyRL's generator).
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
        max_turns = self.extras.get("max_turns")
        self.chat = ChatEnv(
            self._env,
            budget=ObservationBudget(max_chars=int(config.get("max_output_chars", 8000))),
            system_prompt=config.get("system_prompt", ""),
            max_turns=int(max_turns) if max_turns else None,
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
        seed = options.get("seed")
        messages, info = self.chat.reset(
            seed=int(seed) if seed is not None else None, options=options
        )
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
        """Per-episode metrics: reward, passed, stale, adapted, grader_error, steps, variant."""
        final = self._final
        return {
            "reward": final.get("reward") or 0.0,
            "passed": bool(final.get("passed")),
            "stale": bool(final.get("stale")),
            "adapted": bool(final.get("adapted")),
            "grader_error": bool(final.get("grader_error")),
            "infra_error": bool(final.get("infra_error")),
            "turns": self.turns,
            "variant": final.get("variant"),
            "class": final.get("class"),
        }

    @staticmethod
    def aggregate_metrics(metrics: list[dict[str, Any]]) -> dict[str, Any]:
        """Rates over episodes: the stale-rule and adaptation rates count only episodes whose
        variant changed the rules (not original), and infrastructure errors are left out."""
        counted = [m for m in metrics if not m.get("infra_error") and m.get("class") != INFRA_ERROR]
        shifted = [m for m in counted if m.get("variant") not in (None, "original")]
        out: dict[str, Any] = {"episodes": float(len(counted))}
        if counted:
            out["reward"] = sum(float(m.get("reward") or 0.0) for m in counted) / len(counted)
            out["pass_rate"] = sum(bool(m.get("passed")) for m in counted) / len(counted)
            out["grader_error_rate"] = sum(bool(m.get("grader_error")) for m in counted) / len(
                counted
            )
        if shifted:
            out["stale_rate"] = sum(bool(m.get("stale")) for m in shifted) / len(shifted)
            out["adaptation_rate"] = sum(bool(m.get("adapted")) for m in shifted) / len(shifted)
        for variant in sorted({str(m.get("variant")) for m in counted if m.get("variant")}):
            group = [m for m in counted if m.get("variant") == variant]
            out[f"pass_rate/{variant}"] = sum(bool(m.get("passed")) for m in group) / len(group)
        return out

    def close(self) -> None:
        """Stop the episode's sandbox."""
        self.chat.close()


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
    per_task = {t.id: [v for v in variants if v in t.spec.variants] for t in task_set}
    return [
        {
            "prompt": [{"role": "user", "content": f"termgym task {job.task}"}],
            "env_class": env_class,
            "task": job.task,
            "variant": job.variant,
            "seed": job.seed,
            "episode_id": f"{job.episode_id}--s{seed}",
        }
        for job in plan_jobs([t.id for t in task_set], per_task, episodes, seed)
    ]


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
