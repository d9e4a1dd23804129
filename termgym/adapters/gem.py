"""termgym as a GEM environment: text observations, the model's reply as the action.

    pip install 'termgym[gem]'
    from termgym.adapters import gem as termgym_gem
    termgym_gem.register()                            # gem.make("termgym:fuel-planner"), ...
    vec = gem.make_vec(["termgym:all"] * 8, variant={"original": 1, "contradicted": 1})

GEM's environments return text and take the model's raw reply. The first observation is the
protocol and the episode's instruction; each later one is the last command's exit code and
output (cut to the budget, visibly). The reward is the episode's score on the last step; the
last info holds the variant, class and verdicts (`termgym.chat.grading_metadata`), for the
trainer, never the model. GEM's vector envs reset a finished copy in the same step and hand
back the reset's info instead, so the next reset's info repeats them as `prev_episode`
(as GEM's EpisodeTrackingWrapper does with `prev_ep_*`).
"""

from __future__ import annotations

import warnings
from typing import Any

try:
    import gem
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("termgym.adapters.gem needs GEM: pip install 'termgym[gem]'") from exc

from termgym._task_paths import task_dirs
from termgym.chat import ChatEnv, ObservationBudget
from termgym.env import MultiTaskEnv

PREFIX = "termgym:"
ALL_TASKS = f"{PREFIX}all"


class TermgymGemEnv(gem.Env):  # type: ignore[misc]
    """A termgym task set as a `gem.Env` (one task: pass its id or folder as `tasks`).

    Args:
        tasks: The task set (`termgym.env.MultiTaskEnv`), default every registered task.
        task_schedule: How each episode's task is drawn ("uniform", "cycle", a mix, stages).
        variant: The variant schedule (a name, a mix, a curriculum).
        max_output_chars: Characters of each output shown (the visible cut keeps head and tail).
        system_prompt: The protocol text put before the instruction ("": termgym's, None: none).
        seed: Seeds the draws of tasks and variants (gem.make_vec passes one per copy).
        **env_options: TerminalEnv options (backend, mode, max_steps, record_dir, ...).
    """

    def __init__(
        self,
        tasks: Any = "*",
        *,
        task_schedule: Any = "uniform",
        variant: Any = "original",
        max_output_chars: int = 8000,
        system_prompt: str | None = "",
        seed: int | None = None,
        **env_options: Any,
    ) -> None:
        super().__init__()
        env_options.setdefault("agent", "gem")
        self.config: dict[str, Any] = {
            "tasks": tasks,
            "task_schedule": task_schedule,
            "variant": variant,
            "max_output_chars": max_output_chars,
            "system_prompt": system_prompt,
            "seed": seed,
            **env_options,
        }
        """What this environment was made with; `spawn()` makes another of it."""
        self._env = MultiTaskEnv(tasks, task_schedule=task_schedule, variant=variant, **env_options)
        self.chat = ChatEnv(
            self._env,
            budget=ObservationBudget(max_chars=max_output_chars),
            system_prompt=system_prompt,
            tools=False,  # GEM hands over the model's raw text; no tools are offered
        )
        self._seed = seed
        self._reset_once = False

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode; the observation is the protocol and the instruction."""
        if seed is None and not self._reset_once:
            seed = self._seed  # the first episode follows the constructor's seed
        self._reset_once = True
        previous = self.chat.metadata() if self.chat.done else None
        messages, info = self.chat.reset(seed=seed)
        info = dict(info)
        if previous is not None:  # GEM's autoreset replaces the final info with this one
            info["prev_episode"] = previous
        return "\n\n".join(str(m["content"]) for m in messages), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Act on the model's reply; the last step's info carries the verdicts."""
        messages, reward, terminated, truncated, info = self.chat.step(action)
        out = {k: info.get(k) for k in ("turn", "step", "action", "parse_error", "task_id")}
        if terminated or truncated:
            out.update(self.chat.metadata())
        text = "\n\n".join(str(m.get("content", "")) for m in messages)
        return text, float(reward), bool(terminated), bool(truncated), out

    def sample_random_action(self) -> str:
        """A harmless command reply (GEM's interface asks for one)."""
        return "```bash\nls\n```"

    def spawn(self, same_state: bool = False, **kwargs: Any) -> TermgymGemEnv:
        """A new environment of the same configuration (task set, task and variant
        schedules, backend and every other option), `kwargs` overriding any of it.

        A live sandbox cannot be copied, so `same_state=True` raises. As GEM's own
        environments do, a copy that keeps the seed is warned about: it draws the same
        sequence of tasks and variants.
        """
        if same_state:
            raise NotImplementedError("a live sandbox cannot be duplicated; spawn a fresh one")
        config = {**self.config, **kwargs}
        if config["seed"] is not None and config["seed"] == self.config["seed"]:
            warnings.warn(
                "termgym: spawn() kept the seed, so the copy draws the same sequence of tasks "
                "and variants; pass seed=... to spawn() for another",
                stacklevel=2,
            )
        return TermgymGemEnv(**config)

    def close(self) -> None:
        """Stop the sandboxes."""
        self.chat.close()


def register(prefix: str = PREFIX) -> list[str]:
    """Register `termgym:all` and `termgym:<task-id>` for every registered task with GEM."""
    ids = []
    for env_id, tasks in [(f"{prefix}all", "*"), *((prefix + t, t) for t in sorted(task_dirs()))]:
        if env_id not in gem.envs.registration.ENV_REGISTRY:
            gem.register(env_id, f"{__name__}:TermgymGemEnv", tasks=tasks)
        ids.append(env_id)
    return ids
