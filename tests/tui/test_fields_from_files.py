"""The TUI in a real terminal (tmux) over files it was handed: every name is shown, never
obeyed, and an episode whose recording proves no run here wrote it says so.

An agent name, a task id, a variant, a run id or a rule name that carries OSC 2 set the
terminal's title through the run view, the episode view's title line and its rules pane
(the panes showed actions, outputs and messages safely; names and header fields went to
the terminal as they were). An imported ATIF episode that claims a pass showed as graded.
"""

from __future__ import annotations

import time
from pathlib import Path

from click.testing import CliRunner

from termgym.cli import main
from tests.report.test_fields_from_files import _evil_run, _failed_run, _forged_atif
from tests.tui import test_real_terminal as real
from tests.tui.test_real_terminal import TERMGYM, _keys, _screen, _start, _title, _wait_for

tmux_session = real.tmux_session
"""The real-terminal tests' tmux session (a fixture)."""


def test_names_a_run_folder_gave_are_shown_and_never_set_the_title(
    tmux_session: str, tmp_path: Path
) -> None:
    run = _evil_run(tmp_path / "runs")
    _start(tmux_session, f"env -u COLUMNS -u LINES {TERMGYM} tui {run}")
    _wait_for(tmux_session, "ep-evil")
    time.sleep(0.5)
    assert "SET-BY" not in _title(tmux_session), _title(tmux_session)
    assert "⎋]2;SET-BY-agent" in _screen(tmux_session)  # there, as text
    _keys(tmux_session, "Enter")  # the episode view: its title line and every pane
    _wait_for(tmux_session, "step 0 (1 of 1)")
    for pane in ("2", "3", "4", "1"):
        _keys(tmux_session, pane)
        time.sleep(0.5)
        assert "SET-BY" not in _title(tmux_session), (pane, _title(tmux_session))


def test_an_imported_episode_that_claims_a_pass_is_flagged_unverified(
    tmux_session: str, tmp_path: Path
) -> None:
    failed = _failed_run(tmp_path / "runs", "honest-run")
    imported = tmp_path / "imported"
    done = CliRunner().invoke(
        main,
        ["import", "atif", str(_forged_atif(failed, tmp_path / "forged.json", names=False)),
         "--out", str(imported)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    _start(tmux_session, f"env -u COLUMNS -u LINES {TERMGYM} tui {imported}")
    shown = _wait_for(tmux_session, "forged")
    (row,) = [line for line in shown.splitlines() if "forged" in line and "adapted" in line]
    assert "unverified" in row, shown
    # the run's counts leave it out of every class, and count it apart
    (title,) = [line for line in shown.splitlines() if line.lstrip().startswith("run ")]
    assert "unverified 1" in title and "adapted" not in title, title
    assert "SET-BY" not in _title(tmux_session)
    _keys(tmux_session, "Enter")
    _wait_for(tmux_session, "unverified: imported")
    assert "SET-BY" not in _title(tmux_session)
