"""Examples of the report SPEC.md describes. Run them with `python3 -m pytest /app/tests`."""

import subprocess
from pathlib import Path

APP = Path(__file__).resolve().parent.parent
{{# top_n }}
TOP_N = {{ top_n }}


def report(tmp_path, text):
    data = tmp_path / "data"
    data.mkdir()
    (data / "example.txt").write_text(text)
    out = tmp_path / "out" / "report.txt"
    subprocess.run(["bash", str(APP / "report.sh"), str(data), str(out)], check=True)
    return out.read_text().splitlines()


def test_the_report_keeps_the_top_of_the_ranking(tmp_path):
    # 30 long words, the n-th of them n times: the ranking is the reverse of this order.
    words = [letter * 13 for letter in "abcdefghijklmnopqrstuvwxyz"]
    words += ["yz" * 7, "xy" * 7, "wx" * 7, "vw" * 7]
    text = " ".join(w for n, w in enumerate(words, 1) for _ in range(n)) + "\n"
    lines = report(tmp_path, text)
    assert len(lines) == TOP_N
    assert lines[0] == f"{'vw' * 7} {len(words)}"
{{/ top_n }}
