"""Hidden checks (pool alternative): tokenising rules at the length boundary, on unseen texts."""

from __future__ import annotations

import os
import random
import re
import string
import subprocess
from collections import Counter
from pathlib import Path

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))
SEPARATORS = ["-", "'", "7", "_", "\u00e9", "\t", "\r\n", ", ", "..."]


def expected(texts: list[str], rules: dict) -> str:
    counts = Counter(
        w.lower()
        for t in texts
        for w in re.findall(r"[A-Za-z]+", t)
        if len(w) >= rules["min_length"]
    )
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: rules["top_n"]]
    return "".join(f"{w} {n}\n" for w, n in ranked)


def test_separators_split_words_at_the_length_boundary(tmp_path, rules):
    rng = random.Random(21)
    n = rules["min_length"]
    pieces = []
    for i in range(60):
        length = rng.choice([n - 1, n, n + 1, n + 3])
        w = "".join(rng.choice(string.ascii_letters) for _ in range(length))
        pieces.append(w)
        if i % 4 == 0:
            pieces.append(w.upper())
    # Each word is glued to the next by a non-letter, so only letter runs may count.
    text = "".join(p + SEPARATORS[i % len(SEPARATORS)] for i, p in enumerate(pieces)) + "\n"
    data = tmp_path / "texts"
    data.mkdir()
    (data / "glued.txt").write_text(text, encoding="utf-8")
    out = tmp_path / "deep" / "report.txt"
    done = subprocess.run(
        ["bash", str(APP / "report.sh"), str(data), str(out)],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert out.read_text() == expected([text], rules)


def test_fewer_long_words_than_the_cut_are_all_listed_and_none_gives_an_empty_file(tmp_path, rules):
    data = tmp_path / "texts"
    data.mkdir()
    long_word = "q" * rules["min_length"]
    (data / "few.txt").write_text(f"{long_word} {'r' * (rules['min_length'] - 1)} {long_word}\n")
    out = tmp_path / "few.txt"
    subprocess.run(["bash", str(APP / "report.sh"), str(data), str(out)], check=True, timeout=20)
    assert out.read_text() == f"{long_word} 2\n"
    (data / "few.txt").write_text("a bb ccc\n")
    subprocess.run(["bash", str(APP / "report.sh"), str(data), str(out)], check=True, timeout=20)
    assert out.read_text() == ""
