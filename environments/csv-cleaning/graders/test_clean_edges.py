"""Hidden checks (pool): messy rows, duplicates and formatted amounts near the threshold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from reference_clean import clean, same  # noqa: E402

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))


def test_messy_rows_duplicates_and_dollar_amounts(tmp_path, rules):
    limit = rules["outlier_threshold"]
    rows = [
        f'1, 2023-12-31 , Ann  Lee ,"${limit:,}.00"',
        f'2,01.01.2024,Bo Chen,"${limit + 0.25:,.2f}"',
        f"3,29.02.2024,Cy Diaz,{limit - 0.25:.2f}",
        f"3,2024-03-01,Cy Diaz,{limit + 0.25:.2f}",
        "4,30.02.2024,Di Eze,10",
        "5,2024-13-01,Ed Fox,10",
        "6,2024/01/01,Fa Gil,10",
        "7,2024-01-05,   ,10",
        "8,2024-01-05,Gu Ho,ten",
        "0,2024-01-05,Hu Ix,10",
        "-9,2024-01-05,Io Ju,10",
        f"10,2024-01-06,Ja Ko,{limit + 0.25:.2f}",
        "10,2024-01-07,Ja Ko,12.5",
        f'11,07.01.2024,Ka Lu,"${limit * 2:,}"',
        f"12,08.01.2024,La Mo,{limit // 2}",
        f"13,09.01.2024,Ma No,{limit + 1:.1f}",
    ]
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
    assert same(got, want), f"got {got}, expected {want}"
