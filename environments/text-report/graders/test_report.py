"""Hidden checks: the long-word report follows the spec's length and cut-off on unseen texts."""

from __future__ import annotations

import os
import random
import re
import string
import subprocess
from collections import Counter
from pathlib import Path

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))


def expected(texts: list[str], rules: dict) -> str:
    counts = Counter(
        w.lower()
        for t in texts
        for w in re.findall(r"[A-Za-z]+", t)
        if len(w) >= rules["min_length"]
    )
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: rules["top_n"]]
    return "".join(f"{w} {n}\n" for w, n in ranked)


def shown(text: str, rules: dict) -> str:
    """The grader's copy of a workspace file as this episode showed it: its surface values
    (`{{ landmark }}`, drawn per episode and handed in `rules`) filled in."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: str(rules[m.group(1)]), text)


def run_report(data: Path, out: Path) -> str:
    done = subprocess.run(
        ["bash", str(APP / "report.sh"), str(data), str(out)],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=APP,
    )
    assert done.returncode == 0, f"report.sh exited {done.returncode}: {done.stderr[-500:]}"
    return out.read_text()


def word(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(length))


def test_the_shipped_articles_have_their_report(rules):
    shipped = sorted(Path(__file__).with_name("shipped").glob("*.txt"))
    texts = [shown(p.read_text(), rules) for p in shipped]
    summary = APP / "out" / "summary.txt"
    assert summary.is_file(), "out/summary.txt was not written"
    assert summary.read_text() == expected(texts, rules)


def test_words_at_the_minimum_length_count_and_shorter_words_do_not(tmp_path, rules):
    rng = random.Random(11)
    data = tmp_path / "data"
    data.mkdir()
    # Shorter words are more frequent, so a wrong minimum shows at the top of the report.
    words = {length: word(rng, length) for length in range(2, 16)}
    tokens = [words[length] for length in words for _ in range(100 - 4 * length)]
    rng.shuffle(tokens)
    half = len(tokens) // 2
    (data / "one.txt").write_text(" ".join(tokens[:half]) + "\n")
    (data / "two.txt").write_text("\n".join(tokens[half:]) + "\n")
    texts = [(data / "one.txt").read_text(), (data / "two.txt").read_text()]
    assert run_report(data, tmp_path / "out" / "r.txt") == expected(texts, rules)


def test_the_report_keeps_exactly_the_top_of_the_ranking(tmp_path, rules):
    rng = random.Random(12)
    data = tmp_path / "data"
    data.mkdir()
    words = sorted({word(rng, 14) for _ in range(40)})
    tokens = [w.capitalize() if i % 3 == 0 else w for n, w in enumerate(words, 1) for i in range(n)]
    rng.shuffle(tokens)
    text = ". ".join(tokens) + ".\n"
    (data / "ranking.txt").write_text(text)
    (data / "ignored.md").write_text(" ".join(words[:1] * 99))
    (data / "sub").mkdir()
    (data / "sub" / "nested.txt").write_text(" ".join(words[:1] * 99))
    got = run_report(data, tmp_path / "r.txt")
    assert len(got.splitlines()) == rules["top_n"]
    assert got == expected([text], rules)


def test_equal_counts_are_ranked_alphabetically(tmp_path, rules):
    data = tmp_path / "data"
    data.mkdir()
    words = ["zyxwvutsrqponm", "abcdefghijklmn", "mnopqrstuvwxyz", "bcdefghijklmno"]
    text = " ".join(words * 3) + "\n"
    (data / "ties.txt").write_text(text)
    got = run_report(data, tmp_path / "r.txt")
    assert got == expected([text], rules)
