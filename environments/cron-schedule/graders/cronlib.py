"""The crontab reader both hidden test files use: a small cron evaluator."""

import re

CRONTAB = "/app/crontab"
BACKUP = "/opt/reports/bin/backup.sh --full"
ROTATE = "/opt/reports/bin/rotate-logs.sh"
MAIL = "/opt/reports/bin/mail-report.sh --to analysts@example.com"
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

MONTHS = {m: i + 1 for i, m in enumerate(
    "jan feb mar apr may jun jul aug sep oct nov dec".split())}
DOWS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
SPECIAL = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
           "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *",
           "@annually": "0 0 1 1 *"}
BOUNDS = [(0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, MONTHS), (0, 7, DOWS)]


def parse_field(text, low, high, names):
    def value(token):
        token = token.lower()
        if token in names:
            return names[token]
        assert token.isdigit(), f"bad crontab value {token!r}"
        number = int(token)
        assert low <= number <= high, f"crontab value {number} outside {low}-{high}"
        return number

    result = set()
    for item in text.split(","):
        base, slash, step = item.partition("/")
        step = int(step) if step else 1
        if base == "*":
            start, end = low, high
        elif "-" in base:
            a, b = base.split("-", 1)
            start, end = value(a), value(b)
        else:
            start = value(base)
            end = high if slash else start
        result.update(range(start, end + 1, step))
    return result


class CronLine:
    def __init__(self, fields, command):
        self.command = command
        self.restricted = [not f.startswith("*") for f in fields]
        self.sets = [parse_field(f, *b) for f, b in zip(fields, BOUNDS, strict=True)]
        if 7 in self.sets[4]:
            self.sets[4].add(0)

    def fires(self, when):
        minute, hour, dom, month, dow = self.sets
        if when.minute not in minute or when.hour not in hour or when.month not in month:
            return False
        dom_ok = when.day in dom
        dow_ok = (when.isoweekday() % 7) in dow
        if self.restricted[2] and self.restricted[4]:
            return dom_ok or dow_ok
        return dom_ok and dow_ok


def load_crontab():
    jobs = {}
    with open(CRONTAB) as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if re.match(r"^[A-Za-z_][A-Za-z0-9_]*\s*=", line):
                continue
            if line.startswith("@"):
                special, _, command = line.partition(" ")
                assert special in SPECIAL, f"unknown crontab shortcut {special!r}"
                fields = SPECIAL[special].split()
            else:
                parts = line.split(None, 5)
                assert len(parts) == 6, f"not a five-field crontab line: {line!r}"
                fields, command = parts[:5], parts[5]
            command = " ".join(command.split())
            assert command not in jobs, f"more than one line runs {command!r}"
            jobs[command] = CronLine(fields, command)
    return jobs
