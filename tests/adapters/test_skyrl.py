"""termgym in SkyRL-gym: registered in its registry, driven as SkyRL's generator drives envs."""

from __future__ import annotations

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from termgym.adapters import skyrl as termgym_skyrl  # noqa: E402

from .conftest import MEMORIZED, READ_LIMIT  # noqa: E402

pytestmark = pytest.mark.bwrap


def agent_loop(row: dict, env_config: dict, replies: list[str], max_turns: int = 4) -> tuple:
    """SkyRL's SkyRLGymGenerator.agent_loop, minus the model: make, init, step until done."""
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    extras["max_turns"] = max_turns  # the generator sets it
    env = skyrl_gym.make(row["env_class"], env_config=env_config, extras=extras)
    chat_history, _ = env.init(list(row["prompt"]))
    rewards, metadata, done, turn = [], {}, False, 0
    while not done:
        output = replies[min(turn, len(replies) - 1)]
        step = env.step(output)
        chat_history += [{"role": "assistant", "content": output}, *step["observations"]]
        rewards.append(step["reward"])
        done, metadata, turn = step["done"], step["metadata"], turn + 1
    metrics = env.get_metrics()
    env.close()
    return chat_history, rewards, metadata, metrics


def test_episodes_run_through_skyrl_gym_make_and_report_stale_rates(cargo: str) -> None:
    assert termgym_skyrl.register() == "termgym" and "termgym" in skyrl_gym.registry
    assert termgym_skyrl.register() == "termgym"  # idempotent
    rows = termgym_skyrl.dataset_rows([cargo], variants=["original", "contradicted"], episodes=2)
    assert [(r["task"], r["variant"]) for r in rows] == [
        ("cargo-limit", "original"), ("cargo-limit", "original"),
        ("cargo-limit", "contradicted"), ("cargo-limit", "contradicted")]  # fmt: skip
    config = {"tasks": [cargo], "backend": "bwrap"}
    all_metrics = []
    for row, policy in zip(rows, [READ_LIMIT, MEMORIZED, READ_LIMIT, MEMORIZED], strict=True):
        history, rewards, metadata, metrics = agent_loop(
            row, config, [f"```bash\n{policy}\n```", "SUBMIT"]
        )
        assert history[1]["content"].startswith("Task:\nThe loading desk")
        assert all(m["role"] in ("system", "user", "assistant") for m in history)
        assert rewards[:-1] == [0.0] * (len(rewards) - 1)
        assert metadata["variant"] == row["variant"] and metadata["episode_file"] is None
        all_metrics.append(metrics)
    classes = [m["class"] for m in all_metrics]
    assert classes == [None, None, "adapted", "stale"]
    rates = termgym_skyrl.TermgymTextEnv.aggregate_metrics(all_metrics)
    assert rates["stale_rate"] == 0.5 and rates["adaptation_rate"] == 0.5
    assert rates["pass_rate/original"] == 1.0 and rates["pass_rate/contradicted"] == 0.5


def test_a_bad_env_config_names_the_keys_expected() -> None:
    with pytest.raises(ValueError, match="unknown key.*'tasks'"):
        termgym_skyrl.TermgymTextEnv({"taks": "*"}, {})
