"""Examples of the triage RUNBOOK.md describes. Run them: `python3 -m pytest /app/tests`."""

import subprocess
from datetime import datetime, timedelta
from pathlib import Path

APP = Path(__file__).resolve().parent.parent
{{# window_minutes }}
WINDOW_MINUTES = {{ window_minutes }}


def test_outages_within_the_window_are_incidents(tmp_path):
    newest = datetime(2024, 6, 3, 12, 0, 0)
    stamps = [newest - timedelta(minutes=m) for m in range(130, -1, -1)]
    lines = [f"{t:%Y-%m-%dT%H:%M:%S}Z ERROR sev=5 api: outage" for t in stamps]
    (tmp_path / "api.log").write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        [str(APP / "bin" / "triage"), str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[0] == f"incidents: {WINDOW_MINUTES + 1}"
{{/ window_minutes }}
