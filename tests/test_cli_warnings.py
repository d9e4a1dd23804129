"""Warnings on the command line read as termgym's messages do (`Warning: ...`), not as
Python's `path:line: UserWarning: ...` followed by the source line that warned."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

from click.testing import CliRunner

from termgym.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_a_task_found_twice_is_a_plain_warning(tmp_path: Path) -> None:
    for side in ("a", "b"):
        shutil.copytree(ROOT / "environments" / "text-report", tmp_path / side / "text-report")
    before = warnings.showwarning
    result = CliRunner().invoke(
        main, ["tasks", "--path", str(tmp_path / "a"), "--path", str(tmp_path / "b")]
    )
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stderr.splitlines() if "text-report" in x)
    assert line.startswith("Warning: task 'text-report' is in both "), line
    assert "UserWarning" not in result.stderr and "warnings.warn" not in result.stderr
    assert warnings.showwarning is before  # put back when the command ends
