"""Held-out rule values, drawn contradicted values, the evaluator's secret, rule switches."""

from __future__ import annotations

import datetime as dt

import pytest

from termgym.env import VariantSchedule
from termgym.errors import TaskError, TaskSpecError
from termgym.tasks import (
    Rotation,
    RuleDraw,
    contradicted_values,
    instantiate,
    load_task,
    period_of,
    sampled_values,
)

SECRET = "s3cret-of-the-evaluator-0123456789"
CHOICES = {"type": "choice", "value": "a", "choices": ["a", "b", "c", "d", "e", "f"]}


def _choice_task(task_folder, **rule):
    """The fixture task with its rule turned into a choice among six letters."""
    fields = {**CHOICES, "range": None, "contradict": "b", **rule}
    return load_task(task_folder(rule=fields))


def test_training_draws_never_use_held_out_values_and_eval_draws_only_them(task_folder):
    task = _choice_task(task_folder, held_out=["e", "f"])
    train = {sampled_values(task, seed)["limit"] for seed in range(200)}
    held = {sampled_values(task, seed, RuleDraw(split="eval"))["limit"] for seed in range(200)}
    assert train == {"b", "c", "d"}
    assert held == {"e", "f"}


def test_held_out_range_splits_a_numeric_range(task_folder):
    task = load_task(task_folder(rule={"held_out_range": [60, 100]}))
    train = [sampled_values(task, s)["limit"] for s in range(300)]
    held = [sampled_values(task, s, RuleDraw(split="eval"))["limit"] for s in range(300)]
    assert all(1 <= v < 60 and v != 10 for v in train)
    assert all(60 <= v <= 100 for v in held) and len(set(held)) > 20


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"held_out": ["a"]}, r"held_out: expected values other than the authored value 'a'"),
        ({"held_out": ["z"]}, r"held_out: expected one of \['a', 'b'.*found 'z'"),
        ({"held_out": []}, r"held_out: expected at least one value, found an empty list"),
        ({"held_out": ["b"]}, r"contradict: expected a training value, found the held-out"),
        ({"held_out_range": [1, 2]}, r"held_out_range: only a rule with a range takes one"),
    ],
)
def test_bad_held_out_fields_say_what_was_expected(task_folder, rule, message):
    with pytest.raises(TaskSpecError, match=message):
        _choice_task(task_folder, **rule)


def test_held_out_range_must_leave_out_the_authored_value(task_folder):
    with pytest.raises(TaskSpecError, match=r"sub-range without the authored value 10"):
        load_task(task_folder(rule={"held_out_range": [5, 50]}))


def test_contradicted_draws_a_non_original_value_per_episode_unless_fixed(task_folder):
    task = _choice_task(task_folder, held_out=["f"])
    drawn = {contradicted_values(task, s, RuleDraw())["limit"] for s in range(200)}
    assert drawn == {"b", "c", "d", "e"}  # never the original a, never the held-out f
    fixed = {contradicted_values(task, s, RuleDraw(contradict="fixed"))["limit"] for s in range(9)}
    assert fixed == {"b"}
    plan = instantiate(task, "contradicted", seed=3, draw=RuleDraw(split="eval"))
    assert dict(plan.rules_enforced) == {"limit": "f"}
    assert plan.draw.public() == {"split": "eval", "contradict": "drawn"}


def test_eval_split_without_held_out_values_is_a_clear_error(task_folder):
    task = load_task(task_folder())
    with pytest.raises(TaskError, match=r"split 'eval' of the sampled variant needs a rule"):
        instantiate(task, "sampled", seed=1, draw=RuleDraw(split="eval"))
    # variants that do not shift values do not care about the split
    assert instantiate(task, "original", seed=1, draw=RuleDraw(split="eval")).rules_enforced


def test_a_secret_changes_the_draws_and_each_period_has_its_own(task_folder):
    task = load_task(task_folder())
    public = [sampled_values(task, s)["limit"] for s in range(40)]
    week = Rotation.current(SECRET, "week", dt.date(2026, 12, 1))
    next_week = Rotation.current(SECRET, "week", dt.date(2026, 12, 8))
    assert week.period == "2026-W49" and next_week.period == "2026-W50"
    this = [sampled_values(task, s, RuleDraw(rotation=week))["limit"] for s in range(40)]
    again = [sampled_values(task, s, RuleDraw(rotation=week))["limit"] for s in range(40)]
    other = [sampled_values(task, s, RuleDraw(rotation=next_week))["limit"] for s in range(40)]
    assert this == again
    assert this != public and this != other
    assert sum(a == b for a, b in zip(this, public, strict=True)) < 10


def test_each_period_uses_its_own_half_of_the_held_out_values(task_folder):
    task = _choice_task(task_folder, held_out=["c", "d", "e", "f"])
    used = []
    for day in range(0, 70, 7):
        rotation = Rotation.current(SECRET, "week", dt.date(2026, 1, 5) + dt.timedelta(day))
        draw = RuleDraw(split="eval", rotation=rotation)
        used.append(frozenset(sampled_values(task, s, draw)["limit"] for s in range(100)))
    assert all(len(values) == 2 for values in used)
    assert len(set(used)) > 1  # the subset rotates


def test_the_secret_is_kept_out_of_repr_and_public_fields():
    rotation = Rotation(SECRET, "2026-W49")
    draw = RuleDraw(split="eval", rotation=rotation)
    assert SECRET not in repr(rotation) and SECRET not in repr(draw)
    assert SECRET not in str(draw.public())
    assert draw.public()["secret_id"] == rotation.secret_id and len(rotation.secret_id) == 16


def test_a_short_secret_is_refused():
    with pytest.raises(ValueError, match=r"expected at least 16 characters .* found 5"):
        Rotation("short")


def test_periods_of_each_scheme():
    day = dt.date(2026, 1, 1)
    assert period_of("week", day) == "2026-W01"
    assert period_of("day", day) == "2026-01-01"
    assert period_of("month", day) == "2026-01"
    assert period_of("none", day) == "-"


def test_a_rule_switch_replaces_the_authored_value_and_is_checked(task_folder):
    task = load_task(task_folder())
    plan = instantiate(task, "original", seed=1, switched={"limit": 42})
    assert dict(plan.rules_enforced) == {"limit": 42}
    assert b"at most 42 items" in plan.files["policy.txt"]
    assert dict(plan.switched) == {"limit": 42}
    with pytest.raises(TaskError, match=r"rule switch: tiny-limit.limit = 500: .*within range"):
        instantiate(task, "original", seed=1, switched={"limit": 500})
    with pytest.raises(TaskError, match=r"has no rule 'limt'"):
        instantiate(task, "original", seed=1, switched={"limt": 5})


def test_schedule_stages_switch_rules_by_episode_or_by_step(task_folder):
    spec = load_task(task_folder()).spec
    schedule = VariantSchedule.coerce(
        [
            {"episodes": 2, "mix": "original"},
            {"steps": 50, "mix": "original", "rules": {"limit": 30}},
            {"mix": {"sampled": 1}, "split": "train"},
        ],
        spec,
    )
    assert schedule.stage_at(1, 0).switched == {}
    assert schedule.stage_at(2, 10).switched == {"limit": 30}
    assert schedule.stage_at(3, 49).switched == {"limit": 30}
    assert schedule.stage_at(3, 50).mix == (("sampled", 1.0),)
    with pytest.raises(ValueError, match=r"stage 0: rules.limit = 'x': .*expected an int"):
        VariantSchedule.coerce([{"mix": "original", "rules": {"limit": "x"}}], spec)
    with pytest.raises(ValueError, match=r"unknown rule 'limt' in 'rules'.*Did you mean 'limit'"):
        VariantSchedule.coerce([{"mix": "original", "rules": {"limt": 3}}], spec)
    with pytest.raises(ValueError, match=r"expected 'episodes' or 'steps', found both"):
        VariantSchedule.coerce([{"mix": "original", "episodes": 1, "steps": 2}], spec)
    with pytest.raises(ValueError, match=r"expected 'split' to be one of train, eval"):
        VariantSchedule.coerce([{"mix": "original", "split": "test"}], spec)
