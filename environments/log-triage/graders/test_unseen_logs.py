"""Hidden tests: the triage script on unseen log directories (ties, leap day, noise files).

Every log directory is the same whatever the runbook's values (entries of every severity
around every window's edge); only the expected report depends on them.
"""

import random
from datetime import datetime, timedelta

from triagelib import reference, run_triage, write_logs

SEVERITIES = range(1, 6)  # every severity_threshold the runbook may set
WINDOWS = range(10, 121)  # every window_minutes it may set


def check(logdir, rules):
    expected = reference(logdir, rules["severity_threshold"], rules["window_minutes"])
    got = run_triage(logdir)
    assert got[0] == expected[0], f"report says {got[0]!r}, expected {expected[0]!r}"
    assert got == expected


def test_window_reaching_back_over_a_leap_day_midnight(rules, tmp_path):
    ref = datetime(2024, 3, 1, 0, 5, 0)
    entries = [
        (ref, "INFO queue: nightly compaction finished"),
        (ref - timedelta(hours=24, minutes=130), "ERROR sev=5 queue: yesterday's outage"),
    ]
    for minutes in WINDOWS:
        edge = ref - timedelta(minutes=minutes)
        for sev in SEVERITIES:
            entries += [
                (edge, f"ERROR sev={sev} queue: consumer group rebalanced {minutes} min back"),
                (edge - timedelta(seconds=1), f"ERROR sev={sev} queue: offset commit {minutes}"),
            ]
    for minutes in range(0, 125, 4):
        entries.append((ref - timedelta(minutes=minutes, seconds=7),
                        f"ERROR sev={1 + minutes % 5} queue: partition {minutes} lagging"))
    write_logs(tmp_path / "logs", {"queue.log": entries})
    check(tmp_path / "logs", rules)


def test_same_second_entries_follow_file_name_then_line_order(rules, tmp_path):
    ref = datetime(2024, 11, 5, 8, 0, 0)
    t = ref - timedelta(minutes=5)
    logdir = tmp_path / "logs"
    logdir.mkdir()
    stamp = f"{t:%Y-%m-%dT%H:%M:%S}Z"
    zeta = "".join(f"{stamp} ERROR sev={sev} zeta: number {i} in zeta\n"
                   for i, sev in enumerate([3, 1, 5, 2, 4, 5]))
    (logdir / "zeta.log").write_text(zeta + f"{ref:%Y-%m-%dT%H:%M:%S}Z INFO zeta: done\n")
    (logdir / "alpha.log").write_text(
        "".join(f"{stamp} ERROR sev={sev} alpha: number {i} in alpha\n"
                for i, sev in enumerate([5, 2, 4, 1, 3]))
        + f"{stamp} WARN sev=5 alpha: not an error\n"
    )
    check(logdir, rules)


def test_only_log_files_directly_in_the_directory_count(rules, tmp_path):
    ref = datetime(2024, 7, 19, 23, 30, 0)
    logdir = tmp_path / "logs"
    entries = [(ref, "INFO app: ok")]
    two_back = ref - timedelta(minutes=2)
    entries += [(two_back, f"ERROR sev={sev} app: real one") for sev in SEVERITIES]
    write_logs(logdir, {"app.log": entries})
    recent = ref + timedelta(minutes=1)
    (logdir / "app.log.1").write_text(f"{recent:%Y-%m-%dT%H:%M:%S}Z ERROR sev=5 app: rotated\n")
    (logdir / "notes.txt").write_text(f"{recent:%Y-%m-%dT%H:%M:%S}Z ERROR sev=5 nope: notes\n")
    (logdir / "old").mkdir()
    (logdir / "old" / "x.log").write_text(f"{recent:%Y-%m-%dT%H:%M:%S}Z ERROR sev=5 old: x\n")
    check(logdir, rules)


def test_busy_unseen_logs_match_the_reference(rules, tmp_path):
    rng = random.Random(99)
    ref = datetime(2025, 1, 20, 6, 0, 0)
    files = {}
    for name in ["auth.log", "cache.log", "search.log"]:
        entries = []
        for _ in range(400):
            t = ref - timedelta(seconds=rng.randint(0, 150 * 60))
            level = rng.choice(["INFO", "INFO", "WARN", "ERROR", "ERROR"])
            sev = "" if level == "INFO" else f" sev={rng.randint(1, 5)}"
            entries.append((t, f"{level}{sev} {name[:-4]}: event {rng.randrange(10**6)}"))
        files[name] = entries
    files["auth.log"].append((ref, "INFO auth: token cache warmed"))
    write_logs(tmp_path / "logs", files)
    check(tmp_path / "logs", rules)
