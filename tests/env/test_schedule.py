"""Variant schedules: forms, configuration files, errors, and draws under vector autoreset."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import termgym
from termgym.env import DiscreteCommands, VariantSchedule
from termgym.tasks import get_task

TASK = str(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cargo-limit")
CURRICULUM = [{"episodes": 2, "mix": {"original": 1}}, {"mix": "contradicted"}]


def test_a_name_means_every_episode_runs_that_variant() -> None:
    schedule = VariantSchedule.coerce("sampled")
    rng = np.random.default_rng(0)
    assert {schedule.draw(rng, i) for i in range(20)} == {"sampled"}


def test_a_mix_is_drawn_in_proportion_to_its_weights() -> None:
    schedule = VariantSchedule.coerce({"original": 3, "contradicted": 1, "withheld": 0})
    rng = np.random.default_rng(0)
    counts = Counter(schedule.draw(rng) for _ in range(4000))
    assert set(counts) == {"original", "contradicted"}
    assert 0.72 < counts["original"] / 4000 < 0.78
    assert schedule.variants() == ["original", "contradicted"]


def test_a_curriculum_moves_to_the_next_stage_and_keeps_the_last() -> None:
    schedule = VariantSchedule.coerce(
        [
            {"episodes": 2, "mix": {"original": 1}},
            {"episodes": 1, "mix": "withheld"},
            {"mix": "sampled"},
        ]
    )
    rng = np.random.default_rng(0)
    drawn = [schedule.draw(rng, i) for i in range(6)]
    assert drawn == ["original", "original", "withheld", "sampled", "sampled", "sampled"]


def test_a_curriculum_whose_stages_all_end_keeps_its_last_stage() -> None:
    schedule = VariantSchedule.coerce(
        [{"episodes": 1, "mix": "original"}, {"episodes": 1, "mix": "sampled"}]
    )
    assert schedule.stage_at(10).mix == (("sampled", 1.0),)


def test_from_config_reads_yaml_and_json_files(tmp_path: Path) -> None:
    yaml_file = tmp_path / "train.yaml"
    yaml_file.write_text(
        "lr: 0.5\nschedule:\n  - {episodes: 100, mix: {original: 1}}\n"
        "  - {mix: {original: 1, contradicted: 1}}\n"
    )
    json_file = tmp_path / "mix.json"
    json_file.write_text(json.dumps({"original": 1, "sampled": 2}))
    curriculum = VariantSchedule.from_config(yaml_file)
    assert [stage.episodes for stage in curriculum.stages] == [100, None]
    assert curriculum.stage_at(100).mix == (("original", 1.0), ("contradicted", 1.0))
    assert VariantSchedule.from_config(json_file).stages[0].mix == (
        ("original", 1.0),
        ("sampled", 2.0),
    )
    assert VariantSchedule.from_config({"schedule": "withheld"}).variants() == ["withheld"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("contradicetd", r"unknown variant 'contradicetd'.*Did you mean 'contradicted'\?"),
        ({"original": -1, "sampled": 1}, r"weight of 'original' must be a finite number >= 0"),
        ({"original": float("nan")}, r"finite number >= 0, got nan"),
        ({"original": "half"}, r"expected a number as the weight of 'original', got 'half'"),
        ({"original": 0}, "expected a positive weight; they add up to 0"),
        ([], "needs at least one stage"),
        ([{"mix": "original"}, {"mix": "sampled"}], r"stage 0: expected 'episodes'"),
        ([{"episodes": True, "mix": "original"}], "positive int or absent; got True"),
        ([{"episodes": 0, "mix": "original"}], "positive int or absent; got 0"),
        (["original"], r"stage 0: expected a mapping"),
        ([{"mix": {}}], "non-empty"),
        (
            [{"mix": "original", "step": 3}],
            r"expected the keys mix, episodes, steps, split, rules; got \['step'\]",
        ),
        (3, "a variant schedule is a variant name"),
    ],
)
def test_wrong_schedules_raise_saying_what_was_expected(value, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VariantSchedule.coerce(value)


def test_a_variant_the_task_does_not_offer_is_refused() -> None:
    spec = get_task(TASK).spec
    # a variant, only not this task's: said so (it was called an unknown variant)
    with pytest.raises(
        ValueError,
        match=r"the task does not offer the variant 'swapped' .*expected one of original",
    ):
        VariantSchedule.coerce({"original": 1, "swapped": 1}, spec)


def test_a_missing_or_broken_config_file_raises(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is no file"):
        VariantSchedule.from_config(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.json"
    broken.write_text("{original: ")
    with pytest.raises(ValueError, match="expected valid YAML or JSON"):
        VariantSchedule.from_config(broken)


def test_a_training_config_without_a_schedule_key_says_the_key_is_missing(tmp_path: Path) -> None:
    config = tmp_path / "train.yaml"
    config.write_text("lr: 0.5\nepochs: 3\n")  # the schedule forgotten, or misspelt
    with pytest.raises(
        ValueError,
        match=r"train.yaml: expected a 'schedule' key .*found the keys \['epochs', 'lr'\]",
    ):
        VariantSchedule.from_config(config)
    # a mix with a misspelt variant is still read as a mix, and the name corrected
    with pytest.raises(ValueError, match=r"unknown variant 'orignal'.*Did you mean 'original'"):
        VariantSchedule.from_config({"orignal": 1, "contradicted": 1})


def _variants_under_autoreset(run_id: str, schedule, episodes_per_env: int) -> list[list[str]]:
    """Submit at once in 2 envs (SAME_STEP autoreset); the variants each env's episodes ran."""

    def make():
        env = termgym.make(
            TASK, variant=schedule, backend="bwrap", run_id=run_id, pool_size=1, shadow=False
        )
        return DiscreteCommands(env, ["true"])

    vec = SyncVectorEnv([make, make], autoreset_mode=AutoresetMode.SAME_STEP)
    seen: list[list[str]] = [[], []]
    try:
        vec.reset(seed=5)
        for _ in range(episodes_per_env):
            _, _, terminated, _, info = vec.step(np.array([1, 1]))
            assert terminated.all()
            for i in range(2):
                seen[i].append(str(info["final_info"]["variant"][i]))
    finally:
        vec.close()
    return seen


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        ("contradicted", lambda seen: all(v == "contradicted" for v in seen)),
        ({"original": 1, "sampled": 1}, lambda seen: set(seen) == {"original", "sampled"}),
        (CURRICULUM, lambda seen: seen == ["original"] * 2 + ["contradicted"] * 4),
    ],
    ids=["name", "mix", "curriculum"],
)
def test_schedules_hold_inside_a_vector_env_with_autoreset(
    base_rootfs: str, run_id: str, schedule, expected
) -> None:
    # the first reset is episode 0 of each env; every step then ends one episode per env
    for seen in _variants_under_autoreset(run_id, schedule, episodes_per_env=6):
        assert expected(seen), seen
