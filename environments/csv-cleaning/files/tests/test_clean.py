"""Examples of the cleaning data/README.md describes. Run them: `python3 -m pytest /app/tests`."""

import json
import subprocess
from pathlib import Path

APP = Path(__file__).resolve().parent.parent
{{# outlier_threshold }}
THRESHOLD = {{ outlier_threshold }}


def test_amounts_above_the_threshold_are_dropped(tmp_path):
    amounts = range(150, 5101, 50)
    rows = [f"{i},2024-05-01,Customer {i},{a}.00" for i, a in enumerate(amounts, 1)]
    src, out = tmp_path / "export.csv", tmp_path / "clean.json"
    src.write_text("id,date,customer,amount\n" + "\n".join(rows) + "\n")
    subprocess.run(["python3", str(APP / "clean.py"), str(src), str(out)], check=True)
    kept = [row["amount"] for row in json.loads(out.read_text())]
    assert max(kept) <= THRESHOLD < max(kept) + 50
{{/ outlier_threshold }}
