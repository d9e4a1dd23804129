"""Hidden tests: after unseen reference times, each job's next runs are the scheduled ones."""

from datetime import datetime, timedelta

from cronlib import load_crontab, BACKUP, ROTATE, MAIL, DAYS


def next_run(fires, after, limit_days=9):
    t = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    for _ in range(limit_days * 24 * 60):
        if fires(t):
            return t
        t += timedelta(minutes=1)
    return None


def expected_fires(rules, command, when):
    if command == BACKUP:
        return (when.minute == 30 and when.hour == rules["run_hour"]
                and when.weekday() == DAYS.index(rules["weekday"]))
    if command == ROTATE:
        return when.minute % int(rules["rotate_every_minutes"]) == 0
    if command == MAIL:
        return when.weekday() < 5 and when.hour == 7 and when.minute == 45
    raise AssertionError(command)


REFERENCE_TIMES = [
    datetime(2025, 1, 31, 23, 59, 30), datetime(2025, 4, 6, 1, 29), datetime(2025, 4, 9, 3, 30),
    datetime(2025, 8, 16, 12, 7), datetime(2025, 10, 29, 4, 31), datetime(2026, 2, 27, 7, 44),
]


def check_next_runs(rules, command):
    jobs = load_crontab()
    assert command in jobs, f"no crontab line runs {command!r} (found: {sorted(jobs)})"
    for after in REFERENCE_TIMES:
        for _ in range(3):
            want = next_run(lambda t: expected_fires(rules, command, t), after)
            got = next_run(jobs[command].fires, after)
            assert got == want, f"after {after}: {command!r} next runs at {got}, expected {want}"
            after = want


def test_every_line_is_a_valid_five_field_entry():
    assert len(load_crontab()) == 3


def test_next_backup_run(rules):
    check_next_runs(rules, BACKUP)


def test_next_log_rotation_run(rules):
    check_next_runs(rules, ROTATE)


def test_next_report_mail_run(rules):
    check_next_runs(rules, MAIL)
