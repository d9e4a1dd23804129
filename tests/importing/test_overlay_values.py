"""Overlays on real-world layouts: occurrences that state what a rule decides (`values`),
overlays kept apart from the tasks (`--overlays`), units glued to numbers, and the drafts
`termgym overlay suggest` writes. No sandbox here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from termgym.cli import main
from termgym.errors import TaskSpecError
from termgym.importing import import_tasks, suggest_overlay
from termgym.overlay import read_overlay
from termgym.tasks import RuleDraw, instantiate, load_task

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign"
WORDS = FOREIGN / "harbor" / "harbor-top-words"
OVERLAYS = FOREIGN / "overlays"

FIXED = RuleDraw(contradict="fixed")
"""These tests spell out the authored contradicted value."""


@pytest.fixture
def words(tmp_path: Path) -> Path:
    report = import_tasks([WORDS], tmp_path / "out", "harbor", overlays=OVERLAYS)
    assert not report.refused and not report.unused_overlays
    return tmp_path / "out" / "harbor-top-words"


def _rewritten_tests(task_dir: Path, variant: str, seed: int = 1) -> tuple[str, str, str]:
    """(instruction, the test file as the verifier writes it, oracle) for a variant."""
    task = load_task(task_dir)
    plan = instantiate(task, variant, seed=seed, draw=FIXED)
    (grader,) = task.spec.graders
    text = (task_dir / "graders" / "tests" / "test_outputs.py").read_text()
    spans = sorted(grader.params["rewrite"], key=lambda s: s["start"])
    out, cursor = [], 0
    for span in spans:  # what termgym/verifier/imported.py does for the enforced rule set
        value = str(plan.rules_enforced[span["rule"]])
        out += [text[cursor : span["start"]], span["texts"][value] if "texts" in span else value]
        cursor = span["end"]
    return plan.instruction, "".join(out) + text[cursor:], plan.solution("oracle")


def test_derived_occurrences_state_what_each_value_decides(words: Path) -> None:
    instruction, tests, oracle = _rewritten_tests(words, "contradicted")
    assert "prints the 3 most frequent" in instruction
    assert '== ["apple", "pear", "fig"]' in tests
    assert "TOP=3" in oracle
    _, original_tests, memorized = _rewritten_tests(words, "original")
    assert '== ["apple", "pear"]' in original_tests
    assert "TOP=2" in load_task(words).path("solution/memorized.sh").read_text()
    assert "TOP=2" in memorized


def test_withheld_keeps_the_derived_test_at_the_original(words: Path) -> None:
    instruction, tests, _ = _rewritten_tests(words, "withheld")
    assert "prints the most frequent" in instruction and " 2 " not in instruction
    assert '== ["apple", "pear"]' in tests


def _overlay(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "overlay.yaml"
    path.write_text(body)
    return path


def test_a_derived_occurrence_must_name_every_value(tmp_path: Path) -> None:
    path = _overlay(
        tmp_path,
        "rules:\n  n:\n    original: 2\n    choices: [3, 1]\n    occurs:\n"
        "      - {file: instruction, pattern: 'top 2'}\n"
        "      - {file: tests/t.py, pattern: '== [1, 2]', values: {2: '[1, 2]', 3: '[1, 2, 3]'}}\n",
    )
    with pytest.raises(TaskSpecError, match=r"expected a text for every value .* none for 1"):
        read_overlay(path)


def test_a_derived_occurrence_names_only_the_rules_values(tmp_path: Path) -> None:
    path = _overlay(
        tmp_path,
        "rules:\n  n:\n    original: 2\n    choices: [3]\n    occurs:\n"
        "      - {file: tests/t.py, pattern: '== [1, 2]', values: {2: a, 3: b, 7: c}}\n",
    )
    with pytest.raises(TaskSpecError, match=r"expected keys among the rule's values .* found '7'"):
        read_overlay(path)


def test_a_derived_occurrence_needs_choices_not_a_range(tmp_path: Path) -> None:
    path = _overlay(
        tmp_path,
        "rules:\n  n:\n    original: 2\n    contradict: 3\n    range: [1, 9]\n    occurs:\n"
        "      - {file: tests/t.py, pattern: '== [1, 2]', values: {2: a, 3: b}}\n",
    )
    with pytest.raises(TaskSpecError, match="expected `choices` on a rule with derived"):
        read_overlay(path)


def test_float_rules_take_integer_keys_for_their_values(tmp_path: Path) -> None:
    path = _overlay(
        tmp_path,
        "rules:\n  level:\n    original: 3.5\n    choices: [4.0]\n    occurs:\n"
        "      - {file: tests/t.py, pattern: '== 2', values: {3.5: '2', 4: '1'}}\n",
    )
    (occ,) = read_overlay(path).rules["level"].occurs
    assert occ.values == {"3.5": "2", "4.0": "1"}


def test_a_derived_pattern_must_hold_the_originals_text(tmp_path: Path, words: Path) -> None:
    broken = tmp_path / "overlays"
    broken.mkdir()
    text = (OVERLAYS / "harbor-top-words.yaml").read_text()
    (broken / "harbor-top-words.yaml").write_text(
        text.replace("""2: '["apple", "pear"]'""", """2: '["pear", "apple"]'""")
    )
    report = import_tasks([WORDS], tmp_path / "out2", "harbor", overlays=broken)
    assert report.converted
    with pytest.raises(TaskSpecError, match=r"text for the original value .* found it 0 time"):
        load_task(tmp_path / "out2" / "harbor-top-words")


def test_a_unit_after_a_number_is_no_glue_but_a_digit_is(tmp_path: Path) -> None:
    task = tmp_path / "src" / "tb-weight-limit"
    shutil.copytree(FOREIGN / "tb" / "tb-weight-limit", task)
    yaml_path = task / "task.yaml"
    spec = yaml.safe_load(yaml_path.read_text())
    spec["instruction"] = spec["instruction"].replace("no more than 100 kg", "at most 100kg")
    yaml_path.write_text(yaml.safe_dump(spec))
    overlay = (task / "overlay.yaml").read_text()
    (task / "overlay.yaml").write_text(
        overlay.replace('pattern: "no more than 100 kg"', 'pattern: "at most 100kg"')
    )
    import_tasks([task], tmp_path / "out", "terminal-bench")
    plan = instantiate(
        load_task(tmp_path / "out" / "tb-weight-limit"), "contradicted", seed=1, draw=FIXED
    )
    assert "at most 150kg" in plan.instruction
    (task / "overlay.yaml").write_text(overlay.replace('"MAX_WEIGHT = 100"', '"MAX_WEIGHT = 10"'))
    import_tasks([task], tmp_path / "out3", "terminal-bench")
    with pytest.raises(TaskSpecError, match="found it 0 time"):
        load_task(tmp_path / "out3" / "tb-weight-limit")


def test_cli_import_with_an_overlay_folder_says_which_rules_and_which_overlays_went_unused(
    tmp_path: Path,
) -> None:
    overlays = tmp_path / "overlays"
    shutil.copytree(OVERLAYS, overlays)
    (overlays / "no-such-task.yaml").write_text("rules: {}\n")
    result = CliRunner().invoke(
        main,
        [
            "import",
            "harbor",
            str(WORDS),
            "--out",
            str(tmp_path / "out"),
            "--overlays",
            str(overlays),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "harbor-top-words" in result.output and "overlay: top_n" in result.output
    assert "unused    no-such-task.yaml" in result.output


def test_suggest_skips_termgyms_own_files_and_proposes_the_solutions_occurrences(
    tmp_path: Path,
) -> None:
    import_tasks([FOREIGN / "tb" / "tb-solution-module"], tmp_path, "terminal-bench")
    (tmp_path / "tb-solution-module" / "overlay.yaml").unlink()
    found = suggest_overlay(tmp_path / "tb-solution-module")
    files = {f for s in found for f, _ in s.occurs}
    assert not {f for f in files if f.endswith(("termgym-ca.pem", "IMPORT-NOTES.txt"))}
    (bangs,) = [s for s in found if s.value == 3]
    assert [p for f, p in bangs.occurs if f == "solution/oracle.sh" and '"!" * 3' in p]
    assert ("graders/tests/test_outputs.py", "BANGS = 3") in bangs.occurs


def test_suggest_proposes_a_value_the_tests_only_decide(tmp_path: Path) -> None:
    found = suggest_overlay(WORDS)
    (top,) = [s for s in found if s.value == 2]
    assert not top.in_tests  # the test checks the words it decides, not 2 itself
    assert {f for f, _ in top.occurs} == {"instruction", "solution/solve.sh"}
    result = CliRunner().invoke(main, ["overlay", "suggest", str(WORDS)])
    assert "with `values` giving its text for each value" in result.output
