"""Hidden checks (pool): messy rows, duplicates and formatted amounts near the threshold.

The export is the same whatever the rules (amounts near every threshold the policy may
set); what clean.py must make of it stays in this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from reference_clean import clean, same  # noqa: E402

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))


# Every threshold the policy may set (200 to 5000): the same rows whatever the rule.
EVERY_THRESHOLD = range(199, 5002)


def messy_rows():
    rows = [
        "4,30.02.2024,Di Eze,10",
        "5,2024-13-01,Ed Fox,10",
        "6,2024/01/01,Fa Gil,10",
        "7,2024-01-05,   ,10",
        "8,2024-01-05,Gu Ho,ten",
        "0,2024-01-05,Hu Ix,10",
        "-9,2024-01-05,Io Ju,10",
        "10,2024-01-07,Ja Ko,12.5",
        "10,2024-01-08,Ja Ko,13.5",
    ]
    next_id = 100
    for a in EVERY_THRESHOLD:
        # Dollar amounts with thousands separators at and a quarter above each threshold,
        # and duplicates whose first row is an outlier under some thresholds only (the first
        # valid row of an id is kept), a quarter on either side.
        rows += [
            f' {next_id}, 2023-12-31 , Ann  Lee {a} ,"${a:,}.00"',
            f'{next_id + 1},01.01.2024,Bo Chen {a},"${a + 0.25:,.2f}"',
            f"{next_id + 2},29.02.2024,Cy Diaz {a},{a + 0.25:.2f}",
            f"{next_id + 2},2024-03-01,Cy Diaz {a},{a - 0.25:.2f}",
        ]
        next_id += 3
    return rows


def test_messy_rows_duplicates_and_dollar_amounts(tmp_path, rules):
    rows = messy_rows()
    src = tmp_path / "messy.csv"
    text = "id,date,customer,amount\n" + "\n".join(rows) + "\n"
    src.write_text(text)
    out = tmp_path / "messy.json"
    done = subprocess.run(
        ["python3", str(APP / "clean.py"), str(src), str(out)],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-500:]
    got, want = json.loads(out.read_text()), clean(text, rules)
    assert same(got, want), f"kept {len(got)} rows, expected {len(want)}; first {str(got)[:300]}"
