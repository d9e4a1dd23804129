"""Shared by both hidden test files: log parsing, the reference triage, running the script."""

import os
import re
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

APP = Path("/app")
LINE = re.compile(r"^(\S+) (INFO|WARN|ERROR)(?: sev=(\d))? ")


def parse_time(stamp):
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")


def reference(logdir, threshold, window):
    entries = []
    for name in sorted(os.listdir(logdir)):
        path = Path(logdir) / name
        if not name.endswith(".log") or not path.is_file():
            continue
        for index, line in enumerate(path.read_text().splitlines()):
            m = LINE.match(line)
            if m:
                entries.append((parse_time(m.group(1)), name, index, m, line))
    newest = max(e[0] for e in entries)
    since = newest - timedelta(minutes=window)
    hits = [
        e for e in entries
        if e[3].group(2) == "ERROR" and int(e[3].group(3)) >= threshold and e[0] >= since
    ]
    hits.sort(key=lambda e: e[:3])
    return [f"incidents: {len(hits)}"] + [e[4] for e in hits]


def report_lines(text):
    lines = text.rstrip("\n").split("\n")
    return [line.rstrip() for line in lines]


def run_triage(logdir):
    script = APP / "bin" / "triage"
    assert script.exists(), "/app/bin/triage does not exist"
    assert os.access(script, os.X_OK), "/app/bin/triage is not executable"
    proc = subprocess.run(
        [str(script), str(logdir)], capture_output=True, text=True, timeout=20, cwd="/tmp"
    )
    assert proc.returncode == 0, f"triage exited {proc.returncode}: {proc.stderr[-800:]}"
    return report_lines(proc.stdout)


def write_logs(logdir, files):
    logdir.mkdir(parents=True, exist_ok=True)
    for name, entries in files.items():
        lines = [f"{t:%Y-%m-%dT%H:%M:%S}Z {rest}" for t, rest in sorted(entries)]
        (logdir / name).write_text("\n".join(lines) + "\n")
