"""The impossible variant and surface values: what an episode states, shows and enforces."""

from __future__ import annotations

import pytest

from termgym.errors import TaskSpecError
from termgym.tasks import get_task, instantiate, load_task, surface_values

IMPOSSIBLE = {
    "variants": ["original", "contradicted", "withheld", "swapped", "sampled", "impossible"],
    "impossible": {"rule": "limit", "shown_in": ["files/tests/test_examples.py"]},
}
EXAMPLES = "LIMIT = {{ limit }}\n"


def test_an_impossible_episode_states_one_value_and_enforces_another(task_folder):
    task = load_task(task_folder(spec=IMPOSSIBLE, files={"tests/test_examples.py": EXAMPLES}))
    plan = instantiate(task, "impossible", seed=4)
    conflict = plan.conflict
    assert conflict is not None and conflict.rule == "limit"
    stated, enforced = conflict.stated, conflict.enforced
    assert len({stated, enforced, 10}) == 3  # neither the authored value, nor each other
    assert f"at most {stated} items".encode() in plan.files["policy.txt"]
    assert plan.files["tests/test_examples.py"] == f"LIMIT = {enforced}\n".encode()
    assert dict(plan.rules_enforced) == {"limit": enforced}
    assert dict(plan.rules_visible) == {"limit": stated}
    assert [(r.name, dict(r.rules)) for r in plan.rulesets] == [
        ("impossible", {"limit": enforced}),
        ("original", {"limit": 10}),
        ("stated", {"limit": stated}),
    ]
    assert plan.compared == "stated"
    assert conflict.describe() == (
        f"the task states limit = {stated}, but tests/test_examples.py expects {enforced}"
    )
    again = instantiate(task, "impossible", seed=4).conflict
    assert again == conflict  # replayable
    assert instantiate(task, "contradicted", seed=4).conflict is None


def test_the_examples_agree_with_the_task_on_every_possible_variant(task_folder):
    task = load_task(task_folder(spec=IMPOSSIBLE, files={"tests/test_examples.py": EXAMPLES}))
    for variant in ("original", "contradicted", "sampled"):
        plan = instantiate(task, variant, seed=4)
        value = plan.rules_enforced["limit"]
        assert plan.files["tests/test_examples.py"] == f"LIMIT = {value}\n".encode(), variant
        assert plan.compared == variant


@pytest.mark.parametrize(
    ("spec", "files", "message"),
    [
        (
            {"variants": ["original", "impossible"]},
            {},
            "'impossible' needs an `impossible:` section",
        ),
        (
            {"impossible": {"rule": "limit", "shown_in": ["files/policy.txt"]}},
            {},
            "'impossible' is not among the variants",
        ),
        (
            {**IMPOSSIBLE, "impossible": {"rule": "nope", "shown_in": ["files/policy.txt"]}},
            {},
            "impossible.rule: expected one of the rules",
        ),
        (
            {**IMPOSSIBLE, "impossible": {"rule": "limit", "shown_in": ["files/x.txt"]}},
            {"x.txt": "no value here\n"},
            r"files/x.txt should show the enforced value through \{\{ limit \}\}",
        ),
        (
            {**IMPOSSIBLE, "impossible": {"rule": "limit", "shown_in": ["graders/test_limit.py"]}},
            {},
            "expected a text file under files/",
        ),
    ],
)
def test_a_malformed_impossible_section_fails_early(task_folder, spec, files, message):
    with pytest.raises(TaskSpecError, match=message):
        load_task(task_folder(spec=spec, files=files))


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            {
                "type": "choice",
                "value": "a",
                "choices": ["a", "b"],
                "range": None,
                "contradict": "b",
            },
            "at least two choices besides the authored 'a'",
        ),
        (
            {"range": [10, 11], "contradict": 11},
            "a range holding two values besides the authored 10",
        ),
    ],
)
def test_a_rule_without_two_other_values_cannot_be_impossible(task_folder, rule, message):
    folder = task_folder(spec=IMPOSSIBLE, rule=rule, files={"tests/test_examples.py": EXAMPLES})
    with pytest.raises(TaskSpecError, match=message):
        load_task(folder)


SURFACE = {
    "surface": {
        "batch_name": {"value": "alpha", "choices": ["alpha", "beta", "gamma", "delta"]},
        "batch_size": {"value": 7, "range": [3, 40]},
    }
}


def test_surface_values_fill_files_and_paths_and_reach_the_graders(task_folder):
    files = {"batches/{{ batch_name }}.txt": "{{ batch_size }} items of {{ batch_name }}\n"}
    task = load_task(task_folder(spec=SURFACE, files=files))
    values = surface_values(task, 5)
    assert values == surface_values(task, 5)  # the same seed, the same surface
    assert values["batch_name"] != "alpha" and values["batch_size"] != 7  # never as authored
    plan = instantiate(task, "contradicted", seed=5)
    name, size = values["batch_name"], values["batch_size"]
    assert plan.files[f"batches/{name}.txt"] == f"{size} items of {name}\n".encode()
    assert "batches/{{ batch_name }}.txt" not in plan.files
    for ruleset in plan.rulesets:  # every rule set gets the same surface: it is not a rule
        assert {k: ruleset.rules[k] for k in values} == values
    assert plan.surface == values
    assert set(plan.rules_enforced) == set(plan.rules_visible) == {"limit"}  # not rules
    assert instantiate(task, "original", seed=5).surface == values  # whatever the variant
    drawn = {tuple(surface_values(task, seed).values()) for seed in range(30)}
    assert len(drawn) > 10


@pytest.mark.parametrize(
    ("spec", "files", "message"),
    [
        (
            {"surface": {"limit": {"value": 1, "range": [1, 5]}}},
            {},
            "surface: expected names that are not rules",
        ),
        ({"surface": {"s": {"value": "a", "choices": ["a"]}}}, {}, "expected at least two values"),
        (
            {"surface": {"s": {"value": "z", "choices": ["a", "b"]}}},
            {},
            "expected one of the choices",
        ),
        ({"surface": {"s": {"value": 1}}}, {}, "expected either choices or range, found neither"),
        (SURFACE, {"{{ nope }}.txt": "x\n"}, r"names no surface value: .*found \{\{ nope \}\}"),
        (SURFACE, {"a.txt": "{{ nope }}\n"}, r"placeholder \{\{ nope \}\} names no rule"),
    ],
)
def test_a_malformed_surface_fails_early(task_folder, spec, files, message):
    with pytest.raises(TaskSpecError, match=message):
        load_task(task_folder(spec=spec, files=files))


@pytest.mark.parametrize("task_id", ["text-report", "csv-cleaning", "log-triage"])
def test_three_bundled_tasks_declare_all_of_it(task_id):
    task = get_task(task_id)
    spec = task.spec
    assert "impossible" in spec.variants and spec.impossible is not None
    assert spec.surface and spec.protected and spec.cheater
    plan = instantiate(task, "impossible", seed=0)
    assert plan.conflict is not None
    shown = plan.files[plan.conflict.shown_in[0].removeprefix("files/")].decode()
    assert str(plan.conflict.enforced) in shown and str(plan.conflict.stated) not in shown
    other = next(s for s in range(1, 50) if surface_values(task, s) != surface_values(task, 0))
    assert (
        instantiate(task, "original", seed=0).files
        != instantiate(task, "original", seed=other).files
    )
