"""Hidden checks: clean.py drops outliers above the threshold and writes the date format.

The exports given to clean.py are the same whatever the rules; what it must make of them
(`reference_clean.clean` under the enforced rules) stays in this process.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from reference_clean import clean, same  # noqa: E402

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))
HEADER = "id,date,customer,amount\n"


def shown(text: str, rules: dict) -> str:
    """The grader's copy of a workspace file as this episode showed it: its surface values
    (`{{ analyst }}`, drawn per episode and handed in `rules`) filled in."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: str(rules[m.group(1)]), text)


def run_clean(tmp_path: Path, text: str) -> object:
    src, out = tmp_path / "export.csv", tmp_path / "out" / "clean.json"
    src.write_text(text)
    out.parent.mkdir()
    done = subprocess.run(
        ["python3", str(APP / "clean.py"), str(src), str(out)],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=APP,
    )
    assert done.returncode == 0, f"clean.py exited {done.returncode}: {done.stderr[-500:]}"
    return json.loads(out.read_text())


def diff(got: object, want: list[dict]) -> str:
    """What differs, bounded (an export of thousands of rows must not flood the report)."""
    if not isinstance(got, list):
        return f"expected a list of rows, found {str(got)[:300]}"
    got_ids = [r.get("id") if isinstance(r, dict) else r for r in got]
    want_ids = [r["id"] for r in want]
    extra = [i for i in got_ids if i not in set(want_ids)]
    missing = [i for i in want_ids if i not in set(got_ids)]
    return (
        f"kept {len(got_ids)} rows, expected {len(want_ids)}: {len(extra)} kept wrongly "
        f"(first {extra[:10]}), {len(missing)} missing (first {missing[:10]}); "
        f"first rows {str(got)[:300]}"
    )


def test_the_shipped_export_was_cleaned(rules):
    out = APP / "data" / "clean.json"
    assert out.is_file(), "data/clean.json was not written"
    want = clean(shown(Path(__file__).with_name("shipped_raw.csv").read_text(), rules), rules)
    got = json.loads(out.read_text())
    assert same(got, want), diff(got, want)


# Every threshold the policy may set (200 to 5000), a cent above each and half a unit on
# either side (a + 0.5 is half a unit below a + 1): the same export whatever the rule, so
# the threshold can be learnt from the README only, never from the export.
EVERY_THRESHOLD = range(199, 5002)


def test_amounts_on_either_side_of_the_threshold(tmp_path, rules):
    amounts = [0, 1] + [a + d for a in EVERY_THRESHOLD for d in (0, 0.01, 0.5)]
    rows = [f"{i},2024-05-{1 + i % 28:02d},Customer {i},{a:.2f}" for i, a in enumerate(amounts, 1)]
    text = HEADER + "\n".join(rows) + "\n"
    got, want = run_clean(tmp_path, text), clean(text, rules)
    assert same(got, want), diff(got, want)


def test_dates_in_both_input_formats_are_rewritten_in_the_reporting_format(tmp_path, rules):
    rng = random.Random(5)
    rows = []
    for i in range(1, 41):
        day, month, year = rng.randint(1, 28), rng.randint(1, 12), rng.randint(2019, 2025)
        date = f"{year}-{month:02d}-{day:02d}" if i % 2 else f"{day:02d}.{month:02d}.{year}"
        rows.append(f'{i},{date},"  Client   {i} ",{rng.randint(1, 150)}.{rng.randint(0, 99):02d}')
    text = HEADER + "\n".join(rows) + "\n"
    got, want = run_clean(tmp_path, text), clean(text, rules)
    assert same(got, want), diff(got, want)
