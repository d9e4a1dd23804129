"""Hidden tests: the saved incident report, and the triage script on boundary logs it never saw."""

import re
from datetime import datetime, timedelta
from pathlib import Path

from triagelib import APP, reference, report_lines, run_triage, write_logs

LOGS = Path(__file__).with_name("logs")  # the grader's own copy of the shipped logs
SEVERITIES = range(1, 6)  # every severity_threshold the runbook may set
WINDOWS = range(10, 121)  # every window_minutes it may set


def boundary_logs(logdir):
    """Entries of every severity on both sides of every window's edge: the same logs
    whatever the runbook says, so its values cannot be read off them."""
    ref = datetime(2024, 9, 2, 16, 45, 0)
    gateway = [
        (ref, "INFO gateway: shift change note written"),
        (ref - timedelta(seconds=5), "INFO gateway: retry after ERROR sev=5 upstream"),
        (ref - timedelta(seconds=9), "WARN sev=5 gateway: disk 97% full"),
    ]
    billing = []
    for minutes in WINDOWS:
        edge = ref - timedelta(minutes=minutes)
        for sev in SEVERITIES:
            gateway += [
                (edge, f"ERROR sev={sev} gateway: exactly {minutes} minutes old"),
                (edge - timedelta(seconds=1), f"ERROR sev={sev} gateway: {minutes} min 1 s old"),
            ]
            billing.append(
                (edge + timedelta(seconds=30), f"ERROR sev={sev} billing: retry storm {minutes}")
            )
    for minutes in range(1, 130):
        sev = 1 + minutes % 5
        probe = ref - timedelta(minutes=minutes, seconds=30)
        gateway.append((probe, f"ERROR sev={sev} gateway: probe {minutes}"))
    write_logs(logdir, {"gateway.log": gateway, "billing.log": billing})


def shown_logs(rules, folder):
    """The grader's copy of the shipped logs as this episode showed them: their surface
    values (`{{ log_day }}`, drawn per episode and handed in `rules`) filled in."""
    folder.mkdir()
    for log in sorted(LOGS.glob("*.log")):
        text = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: str(rules[m.group(1)]), log.read_text())
        (folder / log.name).write_text(text)
    return folder


def test_saved_report_matches_the_logs(rules, tmp_path):
    path = APP / "report" / "incidents.txt"
    assert path.exists(), "/app/report/incidents.txt does not exist"
    logs = shown_logs(rules, tmp_path / "shipped")
    expected = reference(logs, rules["severity_threshold"], rules["window_minutes"])
    got = report_lines(path.read_text())
    assert got[0] == expected[0], f"report says {got[0]!r}, expected {expected[0]!r}"
    assert got == expected


def test_triage_on_unseen_boundary_logs(rules, tmp_path):
    threshold, window = rules["severity_threshold"], rules["window_minutes"]
    boundary_logs(tmp_path / "logs")
    expected = reference(tmp_path / "logs", threshold, window)
    got = run_triage(tmp_path / "logs")
    assert got[0] == expected[0], f"report says {got[0]!r}, expected {expected[0]!r}"
    assert got == expected


def test_triage_on_the_shipped_logs(rules, tmp_path):
    # A copy the agent's user can read (the grader folder is root's alone), as shown.
    logs = shown_logs(rules, tmp_path / "logs")
    expected = reference(logs, rules["severity_threshold"], rules["window_minutes"])
    assert run_triage(logs) == expected
