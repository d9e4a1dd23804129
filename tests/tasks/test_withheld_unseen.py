"""`termgym check` proves a withheld value is seen nowhere the agent looks, as the trace audit
spells it: a bundled task (csv-cleaning) adapted so that its withheld outlier limit, 250,
leaks through the instruction or a file its setup writes, is refused with the place and the
value named; a file declared `not_evidence` is accepted, and said to carry the value."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from termgym.check import CheckRow, check_variant
from termgym.cli import main
from termgym.tasks import load_task

ROOT = Path(__file__).resolve().parents[2]
LEAK = "(Last quarter the limit was 250 EUR.)"
pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(600)]


def _adapted(tmp_path: Path, **changes: object) -> Path:
    """csv-cleaning, its outlier limit authored as 250, offering original and withheld only
    (the check's other rows are not what this tests), with `changes` applied to task.yaml
    ("instruction_suffix", "setup", "not_evidence")."""
    folder = tmp_path / "tasks" / "csv-limit"
    shutil.copytree(ROOT / "environments" / "csv-cleaning", folder)
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    spec["id"] = "csv-limit"
    spec["variants"] = ["original", "withheld"]
    spec.pop("impossible")
    spec["rules"]["outlier_threshold"]["value"] = 250
    spec["instruction"] += str(changes.get("instruction_suffix", ""))
    spec["setup"] = list(changes.get("setup", []))  # type: ignore[call-overload]
    if "not_evidence" in changes:
        spec["rules"]["outlier_threshold"]["not_evidence"] = changes["not_evidence"]
    (folder / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder


def test_a_limit_stated_in_the_instruction_is_refused_by_check(tmp_path, base_rootfs) -> None:
    folder = _adapted(tmp_path, instruction_suffix=LEAK + "\n")
    listed = CliRunner().invoke(main, ["tasks", "--validate", "--path", str(folder.parent)])
    assert listed.exit_code == 0, listed.output  # the loader's check reads stated_in only
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        main, ["check", "csv-limit", "--path", str(folder.parent), "--backend", "bwrap"]
    )
    assert result.exit_code == 1, result.output
    line = next(x for x in result.output.splitlines() if " unseen " in x)
    assert "FAIL" in line, line
    assert "instruction line 6 spells outlier_threshold's value 250" in result.output
    assert LEAK in result.output


def _withheld_rows(folder: Path) -> dict[str, CheckRow]:
    task = load_task(folder)
    rows = check_variant(task, "withheld", task.spec.image or "", "bwrap")
    return {r.expected: r for r in rows}


def test_a_file_the_setup_writes_is_searched_and_data_may_be_declared(
    tmp_path: Path, base_rootfs
) -> None:
    write = ["echo 'Q3 review: outliers above 250 EUR were dropped' > /app/data/q3.txt"]
    rows = _withheld_rows(_adapted(tmp_path / "a", setup=write))
    assert rows["unseen"].ok is False
    assert "data/q3.txt line 1 spells outlier_threshold's value 250" in rows["unseen"].why
    assert "declared" not in rows
    declared = _withheld_rows(_adapted(tmp_path / "b", setup=write, not_evidence=["data/q*.txt"]))
    assert declared["unseen"].ok is True, declared["unseen"]
    assert declared["declared"].ok is True
    assert "outlier_threshold: carried by data/q3.txt" in declared["declared"].why
    assert declared["pass"].ok is True  # the oracle still passes the withheld episode


def test_a_declaration_that_names_no_visible_file_fails(tmp_path: Path, base_rootfs) -> None:
    rows = _withheld_rows(_adapted(tmp_path, not_evidence=["data/claims.csv"]))
    assert rows["unseen"].ok is True
    assert rows["declared"].ok is False
    assert "no file of the workspace matches ['data/claims.csv']" in rows["declared"].why
