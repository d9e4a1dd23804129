"""Templates fill rule values and drop withheld rules; variants decide what each episode shows."""

from __future__ import annotations

import pytest

from termgym.errors import TaskError
from termgym.tasks import RuleDraw, instantiate, load_task, render, sampled_values
from termgym.tasks._spec import RuleSpec
from termgym.tasks._template import TemplateError, check_blocks
from termgym.tasks._variants import sample_value


def test_placeholders_are_filled_with_values():
    assert (
        render("max {{ w }} / {{w}} kg, strict={{ s }}\n", {"w": 100, "s": True})
        == "max 100 / 100 kg, strict=true\n"
    )


def test_withheld_rule_lines_are_dropped_and_others_kept():
    text = "a: {{ a }}\nb: {{ b }}\nboth {{ a }} {{ b }}\nplain\n"
    assert render(text, {"a": 1, "b": 2}, withheld={"a"}) == "b: 2\nplain\n"


def test_withheld_blocks_are_dropped_whole_and_kept_otherwise():
    text = "start\n{{# a }}\nA is {{ a }}.\nmore about A\n{{/ a }}\nend\n"
    assert render(text, {"a": 5}) == "start\nA is 5.\nmore about A\nend\n"
    assert render(text, {"a": 5}, withheld={"a"}) == "start\nend\n"


def test_inline_blocks_are_dropped_within_the_line():
    text = "Limits: speed{{# a }} (at most {{ a }}){{/ a }}.\n"
    assert render(text, {"a": 3}) == "Limits: speed (at most 3).\n"
    assert render(text, {"a": 3}, withheld={"a"}) == "Limits: speed.\n"


def test_unbalanced_blocks_are_reported():
    with pytest.raises(TemplateError, match=r"line 2: expected \{\{/ a \}\}, found \{\{/ b \}\}"):
        check_blocks("{{# a }}\n{{/ b }}\n")


def test_original_variant_enforces_and_shows_the_authored_value(task_folder):
    plan = instantiate(load_task(task_folder()), "original", seed=1)
    assert dict(plan.rules_enforced) == {"limit": 10}
    assert b"at most 10 items" in plan.files["policy.txt"]
    assert [r.name for r in plan.rulesets] == ["original"]


def test_contradicted_variant_in_fixed_mode_shows_and_enforces_the_contradict_value(task_folder):
    plan = instantiate(
        load_task(task_folder()), "contradicted", seed=1, draw=RuleDraw(contradict="fixed")
    )
    assert dict(plan.rules_enforced) == {"limit": 20} == dict(plan.rules_visible)
    assert b"at most 20 items" in plan.files["policy.txt"]
    assert b"10" not in plan.files["policy.txt"]
    assert [(r.name, dict(r.rules)) for r in plan.rulesets] == [
        ("contradicted", {"limit": 20}),
        ("original", {"limit": 10}),
    ]


def test_withheld_variant_hides_the_rule_but_enforces_the_original(task_folder):
    plan = instantiate(load_task(task_folder()), "withheld", seed=1)
    assert dict(plan.rules_enforced) == {"limit": 10}
    assert dict(plan.rules_visible) == {}
    assert dict(plan.withheld) == {"limit": 10}
    assert plan.files["policy.txt"] == b"Batch policy (ops team)\nBatches are processed in order.\n"


def test_swapped_variant_uses_a_pool_grader_and_shadows_the_main_ones(task_folder):
    plan = instantiate(load_task(task_folder()), "swapped", seed=1)
    assert [g.name for g in plan.graders] == ["limit-file"]
    assert [g.name for g in plan.rulesets[1].graders] == ["limit"]
    assert dict(plan.rules_enforced) == {"limit": 10}


def test_sampled_values_repeat_for_a_seed_and_never_equal_the_original(task_folder):
    task = load_task(task_folder())
    assert sampled_values(task, 7) == sampled_values(task, 7)
    drawn = {sampled_values(task, seed)["limit"] for seed in range(300)}
    assert 10 not in drawn
    assert drawn <= set(range(1, 101)) and len(drawn) > 50
    plan = instantiate(task, "sampled", seed=7)
    value = plan.rules_enforced["limit"]
    assert f"at most {value} items".encode() in plan.files["policy.txt"]


def test_sampling_covers_bools_choices_floats_and_narrow_ranges():
    import random

    rng = random.Random(0)
    assert sample_value(RuleSpec(type="bool", value=True), rng) is False
    assert sample_value(RuleSpec(type="choice", value="a", choices=["a", "b"]), rng) == "b"
    assert sample_value(RuleSpec(type="int", value=3, range=[3, 4]), rng) == 4
    assert sample_value(RuleSpec(type="int", value=3, range=[3, 3]), rng) == 3
    floats = {
        sample_value(RuleSpec(type="float", value=0.5, range=[0.0, 1.0]), rng) for _ in range(50)
    }
    assert 0.5 not in floats and all(0.0 <= f <= 1.0 for f in floats)


def test_unknown_variant_is_rejected(task_folder):
    task = load_task(task_folder(spec={"variants": ["original", "contradicted"]}))
    with pytest.raises(
        TaskError,
        match=r"no variant 'sampled': expected one of \['original', "
        r"'contradicted'\]",
    ):
        instantiate(task, "sampled")
