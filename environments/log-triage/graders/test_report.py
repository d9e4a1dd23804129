"""Hidden tests: the saved incident report, and the triage script on boundary logs it never saw."""

from datetime import datetime, timedelta
from pathlib import Path

from triagelib import APP, reference, report_lines, run_triage, write_logs

LOGS = Path(__file__).with_name("logs")  # the grader's own copy of the shipped logs


def boundary_logs(logdir, threshold, window):
    """Entries on both sides of the severity threshold and of the window's edge."""
    ref = datetime(2024, 9, 2, 16, 45, 0)
    edge = ref - timedelta(minutes=window)
    below = max(threshold - 1, 1)
    files = {
        "gateway.log": [
            (ref, "INFO gateway: shift change note written"),
            (edge, f"ERROR sev={threshold} gateway: exactly at the window edge"),
            (edge - timedelta(seconds=1), "ERROR sev=5 gateway: one second too old"),
            (edge - timedelta(minutes=1), f"ERROR sev={threshold} gateway: a minute too old"),
            (edge + timedelta(minutes=1), f"ERROR sev={threshold} gateway: a minute inside"),
            (ref - timedelta(seconds=5), "INFO gateway: retry after ERROR sev=5 upstream"),
            (ref - timedelta(seconds=9), "WARN sev=5 gateway: disk 97% full"),
        ],
        "billing.log": [
            (ref - timedelta(minutes=3), f"ERROR sev={below} billing: card network refused"),
            (ref - timedelta(minutes=2), f"ERROR sev={threshold} billing: ledger write failed"),
            (ref - timedelta(minutes=1), f"ERROR sev={min(threshold + 1, 5)} billing: payouts stuck"),
            (edge + timedelta(seconds=30), f"ERROR sev={below} billing: retry storm"),
        ],
    }
    for minutes in range(1, 130):
        sev = 1 + minutes % 5
        files["gateway.log"].append(
            (ref - timedelta(minutes=minutes, seconds=30), f"ERROR sev={sev} gateway: probe {minutes}")
        )
    write_logs(logdir, files)


def test_saved_report_matches_the_logs(rules):
    path = APP / "report" / "incidents.txt"
    assert path.exists(), "/app/report/incidents.txt does not exist"
    expected = reference(LOGS, rules["severity_threshold"], rules["window_minutes"])
    got = report_lines(path.read_text())
    assert got[0] == expected[0], f"report says {got[0]!r}, expected {expected[0]!r}"
    assert got == expected


def test_triage_on_unseen_boundary_logs(rules, tmp_path):
    threshold, window = rules["severity_threshold"], rules["window_minutes"]
    boundary_logs(tmp_path / "logs", threshold, window)
    expected = reference(tmp_path / "logs", threshold, window)
    got = run_triage(tmp_path / "logs")
    assert got[0] == expected[0], f"report says {got[0]!r}, expected {expected[0]!r}"
    assert got == expected


def test_triage_on_the_shipped_logs(rules):
    expected = reference(LOGS, rules["severity_threshold"], rules["window_minutes"])
    assert run_triage(LOGS) == expected
