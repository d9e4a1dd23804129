#!/usr/bin/env bash
# Reference solution: reads the backup day and hour and the rotation interval from
# ops/schedule.md (withheld ones from $TERMGYM_WITHHELD_RULES) and writes the crontab.
set -euo pipefail

# step: write the crontab from the schedule ops/schedule.md states
python3 - <<'PY'
import json, os, re

text = open("/app/ops/schedule.md").read()
withheld = json.loads(os.environ.get("TERMGYM_WITHHELD_RULES") or "{}")


def stated(pattern, rule):
    m = re.search(pattern, text)
    return m.group(1) if m else str(withheld[rule])


day = stated(r"Day of the week:\s*(\w+)", "weekday")
hour = int(stated(r"Start hour[^:]*:\s*(\d+)", "run_hour"))
every = int(stated(r"Interval: every (\d+) minutes", "rotate_every_minutes"))
dow = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
with open("/app/crontab", "w") as f:
    f.write("# Reporting host jobs (see ops/schedule.md)\n")
    f.write("# m h dom mon dow command\n")
    f.write(f"30 {hour} * * {dow.index(day.lower())} /opt/reports/bin/backup.sh --full\n")
    f.write(f"*/{every} * * * * /opt/reports/bin/rotate-logs.sh\n")
    f.write("45 7 * * 1-5 /opt/reports/bin/mail-report.sh --to analysts@example.com\n")
PY

# step: show it
cat /app/crontab
