"""termgym in SkyRL-gym: registered in its registry, driven as SkyRL's generator drives envs.

SkyRL's generator (`SkyRLGymGenerator.agent_loop`, in the `skyrl` package) needs Python 3.12,
torch, vLLM and a tokenizer, so `agent_loop` below does what it does with the real
skyrl-gym package: `generator.max_turns` (default 1) put in the extras, the env config read
from `environment.skyrl_gym.<env_class>` (an OmegaConf config), init/step/close run on a
thread pool of `environment.skyrl_gym.max_env_workers`, the loop cut when the input passes
`max_input_length`, `get_metrics()` on the loop's thread, then skyrl-gym's own
`aggregate_for_environment`, as SkyRL's rollout metrics call it.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from omegaconf import OmegaConf  # noqa: E402
from skyrl_gym.metrics import aggregate_for_environment  # noqa: E402

from termgym.adapters import skyrl as termgym_skyrl  # noqa: E402
from termgym.recording import read_run  # noqa: E402
from termgym.report import load_run  # noqa: E402

from .conftest import MEMORIZED, READ_LIMIT  # noqa: E402

pytestmark = pytest.mark.bwrap

SKYRL_MAX_TURNS = 1
"""SkyRL's GeneratorConfig.max_turns default."""


def agent_loop(
    row: dict,
    skyrl_gym_cfg,
    replies: list[str],
    *,
    max_turns: int = SKYRL_MAX_TURNS,
    max_input_length: int | None = None,
) -> tuple:
    """SkyRLGymGenerator.agent_loop, minus the model: its calls in its order and threads.

    `max_input_length` counts the chat history's messages (the generator counts tokens).
    """

    async def run() -> tuple:
        executor = ThreadPoolExecutor(max_workers=skyrl_gym_cfg.max_env_workers)
        loop = asyncio.get_running_loop()
        extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
        extras["max_turns"] = max_turns  # env_extras["max_turns"] = self.max_turns
        env_config = getattr(skyrl_gym_cfg, row["env_class"], dict())
        env = skyrl_gym.make(row["env_class"], env_config=env_config, extras=extras)
        chat_history, _ = await loop.run_in_executor(executor, env.init, list(row["prompt"]))
        rewards, metadata, done, turn = [], {}, False, 0
        while not done:
            if max_input_length and len(chat_history) > max_input_length:
                break  # stop_reason = "length"
            output = replies[min(turn, len(replies) - 1)]
            step = await loop.run_in_executor(executor, env.step, output)
            chat_history += [{"role": "assistant", "content": output}, *step["observations"]]
            rewards.append(step["reward"])
            done, metadata, turn = step["done"], step["metadata"], turn + 1
        metrics = env.get_metrics()
        await loop.run_in_executor(executor, env.close)
        executor.shutdown()
        return chat_history, rewards, metadata, metrics

    return asyncio.run(run())


def skyrl_config(env_config: dict):
    """`environment.skyrl_gym` as SkyRL's config holds it (max_env_workers defaults to 32)."""
    termgym_skyrl.register()
    return OmegaConf.create({"max_env_workers": 32, "termgym": env_config})


def test_episodes_run_through_skyrl_loop_and_rates_match_the_report(
    cargo: str, tmp_path: Path
) -> None:
    assert termgym_skyrl.register() == "termgym" and "termgym" in skyrl_gym.registry
    assert termgym_skyrl.register() == "termgym"  # idempotent
    variants = ["original", "contradicted", "withheld"]
    rows = termgym_skyrl.dataset_rows([cargo], variants=variants, episodes=2)
    assert [(r["task"], r["variant"]) for r in rows] == [
        ("cargo-limit", v) for v in variants for _ in range(2)
    ]
    record = tmp_path / "skyrl-run"
    cfg = skyrl_config({"tasks": [cargo], "backend": "bwrap", "record_dir": str(record)})
    all_metrics = []
    policies = [READ_LIMIT, MEMORIZED] * 3
    with pytest.warns(UserWarning, match="generator.max_turns is 1"):
        for row, policy in zip(rows, policies, strict=True):
            history, rewards, metadata, metrics = agent_loop(
                row, cfg, [f"```bash\n{policy}\n```", "SUBMIT"]
            )
            # SkyRL's default max_turns=1 did not end the episode after one command
            assert len(rewards) == 2 and metrics["turns"] == 2
            assert history[1]["content"].startswith("Task:\nThe loading desk")
            assert "tool" not in history[0]["content"]  # SkyRL offers the model no tools
            assert all(m["role"] in ("system", "user", "assistant") for m in history)
            assert rewards[0] == 0.0 and metadata["variant"] == row["variant"]
            all_metrics.append(metrics)
    assert [m["class"] for m in all_metrics] == [None, None, "adapted", "stale", "neither", "both"]
    rates = aggregate_for_environment("termgym", all_metrics)
    # one definition of every metric: the report's, over the recordings of the same episodes
    report = load_run(record, resamples=0).metrics["skyrl"]
    assert rates["adaptation_rate"] == report.adaptation_rate.value == 0.5
    assert rates["stale_rate"] == report.stale_rate.value == 0.5
    assert rates["memorization_index"] == report.memorization_index.value
    assert rates["pass_rate/withheld"] == report.withheld_hit_rate.value == 0.5
    assert rates["pass_rate/original"] == 1.0 and rates["pass_rate"] == 4 / 6
    assert rates["episodes"] == 6.0 and rates["infra_errors"] == 0.0
    assert all(isinstance(v, float) for v in rates.values())


def test_an_episode_the_generator_cuts_short_is_graded(cargo: str, tmp_path: Path) -> None:
    record = tmp_path / "cut"
    cfg = skyrl_config({"tasks": [cargo], "backend": "bwrap", "record_dir": str(record)})
    (row,) = termgym_skyrl.dataset_rows([cargo], variants=["contradicted"])
    _, rewards, _, metrics = agent_loop(
        row, cfg, [f"```bash\n{READ_LIMIT}\n```", "SUBMIT"], max_turns=4, max_input_length=1
    )
    assert rewards == []  # the length check cut the loop before the first step
    assert (metrics["variant"], metrics["class"]) == ("contradicted", "neither")
    (episode,) = read_run(record).episodes
    assert episode.end is not None and episode.end.episode_class == "neither"
    assert episode.end.truncated and "contradicted" in episode.end.verdicts

    (row,) = termgym_skyrl.dataset_rows([cargo], variants=["contradicted"], seed=1)
    _, rewards, _, metrics = agent_loop(  # the opening (2 messages) and one step (2 more)
        row, cfg, [f"```bash\n{READ_LIMIT}\n```", "SUBMIT"], max_turns=4, max_input_length=3
    )
    assert rewards == [0.0] and (metrics["class"], metrics["reward"]) == ("adapted", 1.0)


def test_a_generator_cap_below_the_budget_is_kept_and_warned_about(cargo: str) -> None:
    cfg = skyrl_config({"tasks": [cargo], "backend": "bwrap"})
    (row,) = termgym_skyrl.dataset_rows([cargo], variants=["original"])
    with pytest.warns(UserWarning, match="max_turns=2 is below the task's step budget"):
        _, rewards, metadata, metrics = agent_loop(row, cfg, ["```bash\nls\n```"], max_turns=2)
    assert len(rewards) == 2 and metrics["class"] is None and metrics["variant"] == "original"
    own = skyrl_config({"tasks": [cargo], "backend": "bwrap", "max_turns": 1})
    _, rewards, _, _ = agent_loop(row, own, ["```bash\nls\n```"])
    assert len(rewards) == 1  # termgym's own max_turns is taken as given


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"variants": ["contradictd"]}, r"found 'contradictd'. Did you mean 'contradicted'\?"),
        (
            {"variants": "contradicted"},
            r"expected a list of variant names, e\.g\. \['contradicted'\]",
        ),
        (
            {"variants": ["impossible"]},
            r"no task of the set offers the variant\(s\) \['impossible'\]",
        ),
        ({"episodes": 0}, r"episodes: expected a positive int, got 0"),
    ],
)
def test_a_dataset_that_would_come_out_empty_or_short_says_why(
    options: dict, expected: str
) -> None:
    """Before, each of these gave a dataset without those episodes (none at all for a
    misspelt variant or one str), written to parquet and trained on without a word."""
    arguments = {"variants": ["original"], "episodes": 1} | options
    with pytest.raises(ValueError, match=expected):
        termgym_skyrl.dataset_rows("fuel-planner", **arguments)


def test_a_bad_env_config_names_the_keys_expected() -> None:
    with pytest.raises(ValueError, match="unknown key.*'tasks'"):
        termgym_skyrl.TermgymTextEnv({"taks": "*"}, {})


def test_the_weak_isolation_policy_reaches_the_episodes_env(cargo: str) -> None:
    """SkyRL's env_config takes TerminalEnv's `weak_isolation` (it named no such key): an
    unknown policy is refused by the env it reaches, when that env is made (its options are
    parsed once, there: `EnvOptions`)."""
    with pytest.raises(ValueError, match="weak_isolation must be one of"):
        termgym_skyrl.TermgymTextEnv(
            {"tasks": [cargo], "backend": "bwrap", "weak_isolation": "zero"}, {}
        )


def test_every_rollout_of_a_row_records_an_episode_of_its_own(cargo: str, tmp_path: Path) -> None:
    """A GRPO group rolls one row out several times, and a second run may record into the
    same folder: the row's episode id named one episode, so the recorder refused every
    rollout after the first (`expected a new episode id`)."""
    record = tmp_path / "group"
    cfg = skyrl_config({"tasks": [cargo], "backend": "bwrap", "record_dir": str(record)})
    (row,) = termgym_skyrl.dataset_rows([cargo], variants=["original"])
    for _ in range(3):  # two rollouts of the group, then a second run's
        _, rewards, _, metrics = agent_loop(
            row, cfg, [f"```bash\n{READ_LIMIT}\n```", "SUBMIT"], max_turns=4
        )
        assert rewards == [0.0, 1.0] and metrics["infra_error"] is False
    ids = [episode.episode_id for episode in read_run(record).episodes]
    assert len(set(ids)) == 3 and all(i.startswith(row["episode_id"] + "--") for i in ids)
