"""`termgym tui` picks what to open: the latest run by default, or says what it expected."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from termgym.tui.app import resolve_target

from termgym.cli import main
from termgym.errors import RecordingError
from termgym.recording import RunWriter


def test_the_latest_run_is_opened_by_default(tmp_path: Path) -> None:
    older = RunWriter(tmp_path / "runs", run_id="20260101-000000-aaaa")
    newer = RunWriter(tmp_path / "runs", run_id="20260102-000000-bbbb")
    os.utime(older.run_dir, (1, 1))
    assert resolve_target(None, tmp_path / "runs") == newer.run_dir


def test_an_episode_file_or_its_cast_is_accepted(run_dir: Path) -> None:
    episode = run_dir / "episodes" / "fuel-0.jsonl"
    assert resolve_target(episode) == episode
    assert resolve_target(episode.with_suffix(".cast")) == episode.with_suffix(".cast")


def test_nothing_to_open_says_what_was_expected(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="expected a run folder under"):
        resolve_target(None, tmp_path / "runs")
    with pytest.raises(RecordingError, match="found nothing"):
        resolve_target(tmp_path / "missing")
    other = tmp_path / "notes.txt"
    other.write_text("x")
    with pytest.raises(RecordingError, match="expected a .jsonl"):
        resolve_target(other)


def test_the_command_reports_a_missing_target_without_a_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["tui", str(tmp_path / "missing")])
    assert result.exit_code == 1
    assert "expected a run folder or an episode file" in result.output
    assert "Traceback" not in result.output
