#!/usr/bin/env bash
# Reference solution: take the production values from the deployment guide (or, for a value
# withheld from it, from $TERMGYM_WITHHELD_RULES) and fill in the example config.
set -euo pipefail

# step: fill in the config from the deployment guide's production values
APP="${TERMGYM_WORKDIR:-/app}"
python3 - "$APP" <<'PY'
import json, os, re, sys
app = sys.argv[1]
guide = open(os.path.join(app, "docs", "deployment.md")).read()
fallback = json.loads(os.environ.get("TERMGYM_WITHHELD_RULES") or "{}")

def stated(pattern, rule):
    m = re.search(pattern, guide, re.M)
    return m.group(1) if m else str(fallback[rule])

values = {
    "port": stated(r"^\s*port (\d+)\s*$", "port"),
    "max_connections": stated(r"^\s*max_connections (\d+)\s*$", "max_connections"),
    "level": stated(r"^\s*level (\w+)\s*$", "log_level"),
}
lines = []
for line in open(os.path.join(app, "etc", "webapp.ini.example")):
    key = line.split("=")[0].strip()
    if key == "host":
        line = "host = 127.0.0.1\n"
    elif key in values:
        line = f"{key} = {values[key]}\n"
    lines.append(line)
open(os.path.join(app, "etc", "webapp.ini"), "w").write("".join(lines))
PY

# step: check it
python3 "$APP/webapp.py" --check "$APP/etc/webapp.ini"
