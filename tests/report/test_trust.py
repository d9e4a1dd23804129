"""Verdicts reached on a snapshot, and those whose tests loaded the agent's code, are shown
apart in `termgym report` and its HTML: a real run of an imported task's oracle, which
installs a module the tests import."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from termgym.cli import main
from termgym.importing import import_tasks
from termgym.report import load_run, render_html

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign"
pytestmark = pytest.mark.bwrap


def test_snapshot_verdicts_and_the_agents_code_in_the_tests_are_reported_apart(
    tmp_path: Path, base_image: str, bwrap_available: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    imported = tmp_path / "imported"
    import_tasks([FOREIGN / "snapshot" / "tb-installed-greeter"], imported, "terminal-bench")
    monkeypatch.setenv("TERMGYM_TASKS_PATH", str(imported))
    out = tmp_path / "run"
    done = CliRunner().invoke(
        main,
        ["run", "--agent", "oracle", "--tasks", "tb-installed-greeter", "--variants",
         "original,contradicted", "--episodes", "1", "--backend", "bwrap", "--out", str(out)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    run = load_run(out)
    assert {s.filesystem for s in run.summaries} == {"snapshot"}
    assert all(any("greeting.py" in gap for gap in s.isolation) for s in run.summaries)
    report = CliRunner().invoke(main, ["report", str(out)])
    assert report.exit_code == 0, report.output
    printed = " ".join(report.output.split())  # the table wraps to the terminal's width
    assert "Grading trust" in printed
    assert "2 of 2 episodes graded on the agent's whole filesystem" in printed
    assert "2 verdicts rest on weaker isolation" in printed
    html = render_html(run)
    assert "Grading trust" in html and "greeting.py" in html
