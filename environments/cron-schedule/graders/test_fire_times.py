"""Hidden tests: the crontab's jobs fire at exactly the minutes the schedule asks for."""

from datetime import datetime, timedelta

from cronlib import load_crontab, BACKUP, ROTATE, MAIL, DAYS


def minutes(start, days):
    t = start
    for _ in range(days * 24 * 60):
        yield t
        t += timedelta(minutes=1)


def expected_fires(rules, command, when):
    if command == BACKUP:
        return (when.minute == 30 and when.hour == rules["run_hour"]
                and when.weekday() == DAYS.index(rules["weekday"]))
    if command == ROTATE:
        return when.minute % int(rules["rotate_every_minutes"]) == 0
    if command == MAIL:
        return when.weekday() < 5 and when.hour == 7 and when.minute == 45
    raise AssertionError(command)


def check_job(rules, command, start, days):
    jobs = load_crontab()
    assert command in jobs, f"no crontab line runs {command!r} (found: {sorted(jobs)})"
    job = jobs[command]
    for when in minutes(start, days):
        want = expected_fires(rules, command, when)
        got = job.fires(when)
        assert got == want, (
            f"{command!r} {'fires' if got else 'does not fire'} at {when:%a %Y-%m-%d %H:%M}, "
            f"the schedule says it {'should' if want else 'should not'}"
        )


def test_crontab_has_exactly_the_three_jobs():
    assert sorted(load_crontab()) == sorted([BACKUP, ROTATE, MAIL])


def test_backup_fires_on_the_scheduled_day_and_hour(rules):
    check_job(rules, BACKUP, datetime(2025, 3, 3), 14)


def test_backup_schedule_holds_across_month_and_year_ends(rules):
    check_job(rules, BACKUP, datetime(2025, 12, 27), 9)


def test_log_rotation_fires_at_the_scheduled_interval(rules):
    check_job(rules, ROTATE, datetime(2025, 6, 28, 22), 2)


def test_morning_report_fires_on_weekdays_only(rules):
    check_job(rules, MAIL, datetime(2025, 2, 24), 8)
