"""Hidden checks (pool alternative): tokenising rules at the length boundary, on unseen texts.

The texts are the same whatever the spec's values (words of every length around every
minimum it may set); only the expected report depends on them.
"""

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
LENGTHS = range(3, 16)  # one under every min_length the spec may set (4 to 12), to 3 over


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
    pieces = []
    for length in LENGTHS:
        # Shorter words are more frequent, so a wrong minimum shows at the top of the report.
        w = "".join(rng.choice(string.ascii_letters) for _ in range(length))
        pieces += [w.upper() if i % 4 == 0 else w for i in range(20 - length)]
        pieces.append("".join(rng.choice(string.ascii_letters) for _ in range(length)))
    rng.shuffle(pieces)
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
    # Long and short under every minimum the spec may set (4 to 12), fewer than any cut (3).
    long_word, short_word = "q" * 12, "r" * 3
    (data / "few.txt").write_text(f"{long_word} {short_word} {long_word}\n")
    out = tmp_path / "few.txt"
    subprocess.run(["bash", str(APP / "report.sh"), str(data), str(out)], check=True, timeout=20)
    assert len(long_word) >= rules["min_length"] > len(short_word)
    assert out.read_text() == f"{long_word} 2\n"
    (data / "few.txt").write_text("a bb ccc\n")
    subprocess.run(["bash", str(APP / "report.sh"), str(data), str(out)], check=True, timeout=20)
    assert out.read_text() == ""
