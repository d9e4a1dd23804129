"""termgym in verifiers' classic API (0.2, 0.3): a `vf.MultiTurnEnv` with bash/keys/submit tools.

    pip install 'termgym[verifiers]'
    import verifiers as vf
    env = vf.load_environment("termgym.adapters.verifiers", tasks="*",
                              variants=["original", "contradicted"], episodes=4)
    results = await env.evaluate(client=AsyncOpenAI(base_url=...), model="...")

This targets verifiers' classic environment API (`vf.MultiTurnEnv`, rubrics, `evaluate` /
`generate`, the API of 0.2 and of `verifiers.legacy` in 0.3); `termgym.adapters.verifiers`
picks it when the installed verifiers has it, and `_verifiers_v1` (the v1 API of 0.4) when
it does not.

Each dataset row is one episode (task, variant, seed in its `info`, which the trainer
reads and the model does not). `setup_state` starts the episode and replaces the row's
placeholder prompt with the episode's own (the system prompt, the rendered instruction);
each `env_response` runs the model's tool call or fenced block through the shared parser;
the episode ends when the model submits or the turns run out, and the rubric's reward is the
episode's score. The class and verdicts are in `state["termgym"]` and, as metrics, in every
result (`stale`, `adapted`, `passed_original`, `grader_error`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import verifiers as vf
from datasets import Dataset
from verifiers.utils.message_utils import normalize_messages

from termgym.chat import ChatEnv, ObservationBudget, tool_schemas
from termgym.env import TerminalEnv, new_episode_id, resolve_task_set, run_blocking
from termgym.run import plan_task_set

STATE_KEY = "termgym"


def episode_rows(
    tasks: Any = "*", *, variants: Sequence[str] = ("original",), episodes: int = 1, seed: int = 0
) -> list[dict[str, Any]]:
    """One dataset row per (task, variant, index), each task with the variants it offers."""
    task_set = resolve_task_set(tasks)
    roots = {t.id: str(t.root.resolve()) for t in task_set}
    return [
        {
            "prompt": [{"role": "user", "content": f"termgym task {job.task}"}],
            "answer": "",
            "info": {
                "task_dir": roots[job.task],
                "task_id": job.task,
                "variant": job.variant,
                "seed": job.seed,
                "episode_id": f"{job.episode_id}--s{seed}",
            },
        }
        for job in plan_task_set(task_set, variants, episodes, seed)
    ]


class TermgymVerifiersEnv(vf.MultiTurnEnv):  # type: ignore[misc]
    """termgym episodes as verifiers rollouts (see the module docstring).

    Args:
        tasks, variants, episodes, seed: The episodes of the dataset (`episode_rows`).
        max_output_chars: Characters of each output shown to the model.
        max_turns: Replies per episode (default: the task's step budget).
        env_options: TerminalEnv options (backend, mode, max_steps, record_dir, shadow, ...).
        **kwargs: `vf.MultiTurnEnv`'s (sampling_args, max_workers, ...).
    """

    def __init__(
        self,
        tasks: Any = "*",
        *,
        variants: Sequence[str] = ("original",),
        episodes: int = 1,
        seed: int = 0,
        max_output_chars: int = 8000,
        max_turns: int | None = None,
        env_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        rows = episode_rows(tasks, variants=variants, episodes=episodes, seed=seed)
        self.env_options = {"agent": "verifiers", **(env_options or {})}
        if self.env_options.get("record_dir"):
            self.env_options.setdefault("run_id", Path(self.env_options["record_dir"]).name)
        mode = str(self.env_options.get("mode", "command"))
        self.budget = ObservationBudget(max_chars=max_output_chars)
        self.chat_turns = max_turns
        self._chats: dict[str, ChatEnv] = {}
        rubric = vf.Rubric(funcs=[termgym_reward], weights=[1.0])
        for metric in (stale, adapted, passed_original, grader_error):
            rubric.add_metric(metric)
        dataset = Dataset.from_list(rows)
        super().__init__(
            dataset=dataset,
            eval_dataset=dataset,
            rubric=rubric,
            tool_defs=[schema["function"] for schema in tool_schemas(mode)],
            max_turns=-1,  # the chat adapter's turn budget ends the episode (graded)
            **kwargs,
        )

    async def setup_state(self, state: Any) -> Any:
        """Start the row's episode and put its opening messages in place of the prompt."""
        info = dict(state["info"])
        env = await run_blocking(TerminalEnv, info["task_dir"], **self.env_options)
        chat = ChatEnv(env, budget=self.budget, max_turns=self.chat_turns)
        self._chats[state["trajectory_id"]] = chat
        opening, _ = await chat.areset(
            seed=int(info["seed"]),
            options={
                "variant": info["variant"],
                "seed": int(info["seed"]),
                # one episode per rollout: the row's id with a token of its own
                "episode_id": new_episode_id(str(info["episode_id"]), planned=True)
                if info.get("episode_id")
                else None,
            },
        )
        state["prompt"] = normalize_messages(opening, field_name="termgym opening")
        state[STATE_KEY] = {}
        return state

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        """Run the model's last reply in the episode; the end goes in final_env_response."""
        chat = self._chats[state["trajectory_id"]]
        reply = messages[-1]
        reply = reply.model_dump(exclude_none=True) if hasattr(reply, "model_dump") else reply
        new, reward, terminated, truncated, info = await chat.astep(reply)
        response = normalize_messages(new, field_name="termgym env_response")
        if terminated or truncated:
            state[STATE_KEY] = chat.metadata()
            state["final_env_response"] = response
        return response

    @vf.cleanup
    async def close_episode(self, state: Any) -> None:
        """Grade an episode the rollout left unfinished, then stop its sandbox."""
        chat = self._chats.pop(state.get("trajectory_id", ""), None)
        if chat is None:
            return
        try:
            if await chat.astop("rollout ended") is not None:
                state[STATE_KEY] = chat.metadata()
        finally:
            await chat.aclose()


async def termgym_reward(state: Any) -> float:
    """The episode's score under its own (possibly changed) rules."""
    return float((state.get(STATE_KEY) or {}).get("reward") or 0.0)


async def stale(state: Any) -> float:
    """1 when the episode followed the original rule where the variant changed it."""
    return float(bool((state.get(STATE_KEY) or {}).get("stale")))


async def adapted(state: Any) -> float:
    """1 when the episode passed the changed rule and failed the original one."""
    return float(bool((state.get(STATE_KEY) or {}).get("adapted")))


async def passed_original(state: Any) -> float:
    """1 when the final state passes the authored rules (the shadow verdict)."""
    return float(bool((state.get(STATE_KEY) or {}).get("passed_original")))


async def grader_error(state: Any) -> float:
    """1 when the final state could not be graded (counted as a failure)."""
    return float(bool((state.get(STATE_KEY) or {}).get("grader_error")))


def load_environment(**kwargs: Any) -> TermgymVerifiersEnv:
    """verifiers' entry point: `vf.load_environment("termgym.adapters.verifiers", ...)`."""
    return TermgymVerifiersEnv(**kwargs)
