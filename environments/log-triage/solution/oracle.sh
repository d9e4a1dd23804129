#!/usr/bin/env bash
# Reference solution: reads the severity threshold and the window from RUNBOOK.md (withheld
# ones from $TERMGYM_WITHHELD_RULES), writes bin/triage with them and runs it on the logs.
set -euo pipefail

# step: take the threshold and the window RUNBOOK.md states
read -r THRESHOLD WINDOW < <(python3 - <<'PY'
import json, os, re
text = open("/app/RUNBOOK.md").read()
withheld = json.loads(os.environ.get("TERMGYM_WITHHELD_RULES") or "{}")
sev = re.search(r"severity is at least (\d+)", text)
win = re.search(r"within the last (\d+) minutes", text)
print(sev.group(1) if sev else withheld["severity_threshold"],
      win.group(1) if win else withheld["window_minutes"])
PY
)

# step: write bin/triage with them
mkdir -p /app/bin /app/report
cat > /app/bin/triage <<PY
#!/usr/bin/env python3
"""Print the incident report (see RUNBOOK.md) for the *.log files of a log directory."""
import os
import re
import sys
from datetime import datetime, timedelta

SEVERITY_THRESHOLD = ${THRESHOLD}
WINDOW_MINUTES = ${WINDOW}
LINE = re.compile(r"^(\S+) (INFO|WARN|ERROR)(?: sev=(\d+))? ")


def main(logdir):
    entries = []
    for name in sorted(os.listdir(logdir)):
        path = os.path.join(logdir, name)
        if not name.endswith(".log") or not os.path.isfile(path):
            continue
        with open(path) as f:
            for index, line in enumerate(f.read().splitlines()):
                m = LINE.match(line)
                if m:
                    when = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%SZ")
                    entries.append((when, name, index, m.group(2), m.group(3), line))
    if not entries:
        print("incidents: 0")
        return
    since = max(e[0] for e in entries) - timedelta(minutes=WINDOW_MINUTES)
    hits = sorted(
        e for e in entries
        if e[3] == "ERROR" and int(e[4]) >= SEVERITY_THRESHOLD and e[0] >= since
    )
    print(f"incidents: {len(hits)}")
    for e in hits:
        print(e[5])


if __name__ == "__main__":
    main(sys.argv[1])
PY

# step: run it on the logs
chmod +x /app/bin/triage
/app/bin/triage /app/logs > /app/report/incidents.txt
head -3 /app/report/incidents.txt
