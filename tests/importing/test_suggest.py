"""`termgym overlay suggest`: whole tokens on word boundaries, boilerplate left out, ranked by
whether the tests' code checks them, and a draft that imports once its choices are filled.
No sandbox here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from termgym.cli import main
from termgym.importing import import_tasks, suggest_overlay
from termgym.importing._suggest import as_overlay_yaml
from termgym.importing._tokens import pattern_around, python_mentions, tokens
from termgym.tasks import load_task

INSTRUCTION = """\
# Serve the weekly report

1. Start a web server that listens on port 8080 (the dashboard polls localhost:8080).
2. Read /app/data.csv and write the 5 largest amounts to /app/report.txt, one per line.
3. Refuse request bodies larger than 64 KB.

Use Python 3.13; the server must answer within 2 seconds.
"""
DOCKERFILE = """\
FROM python:3.13-slim-bookworm
WORKDIR /app
COPY data.csv /app/data.csv
"""
TEST_SCRIPT = """\
#!/bin/bash
pip install pytest==8.4.1 requests==2.32.3
pytest /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt
else echo 0 > /logs/verifier/reward.txt; fi
exit 1
"""
TESTS = '''\
"""Checks the report and the server on port 8080."""
import subprocess

import requests

PORT = 8080


def test_report_lists_the_largest_amounts():
    lines = open("/app/report.txt").read().splitlines()
    assert len(lines) == 5, "expected 5 lines, one per amount"
    assert lines[0] == "9100"


def test_the_server_answers():
    # the dashboard polls it; bodies over 64 KB are refused
    response = requests.get(f"http://localhost:{PORT}/report.txt", timeout=2)
    assert response.status_code == 200


def test_the_source_is_kept():
    done = subprocess.run(["test", "-f", "/app/data.csv"])
    assert done.returncode == 1 or True
'''
SOLUTION = """\
#!/bin/bash
# Serve the report on port 8080.
sort -nr /app/data.csv | head -n 5 > /app/report.txt
MAX_BODY=64
nohup python3 -m http.server 8080 --directory /app >/dev/null 2>&1 &
sleep 2
curl -s localhost:8080/report.txt >/dev/null
curl -s localhost:8080/report.txt >/dev/null
exit 1
"""


@pytest.fixture
def task(tmp_path: Path) -> Path:
    """A small Harbor task written for these tests."""
    root = tmp_path / "sources" / "weekly-report"
    for rel, text in {
        "instruction.md": INSTRUCTION,
        "task.toml": 'version = "1.0"\n[verifier]\ntimeout_sec = 60\n',
        "environment/Dockerfile": DOCKERFILE,
        "environment/data.csv": "9100\n4200\n300\n7700\n12\n640\n",
        "tests/test.sh": TEST_SCRIPT,
        "tests/test_outputs.py": TESTS,
        "solution/solve.sh": SOLUTION,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _text(task: Path, file: str) -> str:
    return (task / ("instruction.md" if file == "instruction" else file)).read_text()


def test_patterns_begin_and_end_on_word_boundaries(task: Path) -> None:
    found = suggest_overlay(task, limit=20)
    assert found
    for suggestion in found:
        for file, pattern in suggestion.occurs:
            text = _text(task, file)
            for match in re.finditer(re.escape(pattern), text):
                before = text[match.start() - 1 : match.start()]
                after = text[match.end() : match.end() + 1]
                glued_left = re.match(r"\w", pattern[0]) and re.match(r"\w", before)
                glued_right = re.match(r"\w", pattern[-1]) and re.match(r"\w", after)
                assert not glued_left and not glued_right, (file, pattern)


def test_a_pattern_never_cuts_into_a_word() -> None:
    text = "the server listens on port 8080 and reports to localhost:8080/health"
    start = text.index("8080")
    assert pattern_around(text, start, start + 4) == "port 8080"
    later = text.rindex("8080")
    assert pattern_around(text, later, later + 4) == "localhost:8080"


def test_boilerplate_is_never_proposed(task: Path) -> None:
    values = {s.value for s in suggest_overlay(task, limit=50)}
    # list numbering (1. 2. 3.), exit statuses, a version (Python 3.13, pytest==8.4.1),
    # a sleep and a timeout (2), an HTTP status check (200)
    assert not values & {1, 2, 3, 3.13, 8.4, 200}
    found = tokens("1. Create the file\nexit 1\nsleep 2\npip install pytest==8.4.1\nuse 7 days")
    assert set(found) == {"7"}


def test_what_the_tests_check_ranks_before_what_they_mention(task: Path) -> None:
    found = suggest_overlay(task, limit=20)
    by_value = {s.value: s for s in found}
    assert found[0].value == 8080
    port = by_value[8080]
    assert (port.checks, port.mentions, port.stated) == (1, 1, 2)  # PORT = 8080; the docstring
    # 64 KB: stated, hard-coded, but only in a comment of the tests: proposed after the
    # checked ones, marked as not in the tests' code
    body = by_value[64]
    assert not body.in_tests and body.mentions == 1
    assert found.index(body) > found.index(port)
    assert found.index(body) > found.index(by_value[5])


def test_mentions_are_comments_docstrings_and_messages() -> None:
    text = '"""Port 8080."""\nPORT = 8080  # 8080\nassert x == 8080, "not 8080"\n'
    spans = python_mentions(text)
    inside = [
        m.start() for m in re.finditer("8080", text) if any(a <= m.start() < b for a, b in spans)
    ]
    assert len(inside) == 3  # the docstring, the comment, the message; never the code


def test_identical_lines_share_one_pattern_with_a_count(task: Path) -> None:
    (port,) = [s for s in suggest_overlay(task, limit=20) if s.value == 8080]
    counted = dict(zip(port.occurs, port.counts, strict=True))
    assert counted[("solution/solve.sh", "curl -s localhost:8080/report.txt >/dev/null")] == 2
    draft = as_overlay_yaml([port])
    assert "count: 2" in draft


def test_an_input_the_image_holds_is_marked(task: Path) -> None:
    (data,) = [s for s in suggest_overlay(task, limit=50) if s.value == "/app/data.csv"]
    assert data.input
    assert any("an input" in note for note in data.notes)
    (report,) = [s for s in suggest_overlay(task, limit=50) if s.value == "/app/report.txt"]
    assert not report.input


def test_the_draft_imports_once_its_choices_are_filled(task: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["overlay", "suggest", str(task), "--limit", "1"])
    assert result.exit_code == 0, result.output
    assert "# tests: " in result.output
    draft = yaml.safe_load(result.output)
    (name,) = draft["rules"]
    draft["rules"][name]["choices"] = [9090, 8181]
    overlays = tmp_path / "overlays"
    overlays.mkdir()
    (overlays / "weekly-report.yaml").write_text(yaml.safe_dump(draft))
    report = import_tasks([task.parent], tmp_path / "out", "harbor", overlays=overlays)
    assert not report.refused, report.refused
    (done,) = report.converted
    loaded = load_task(done.folder)
    assert loaded.rules[name].value == 8080
    spans = [s for s in loaded.spans if s.rule == name]
    assert {s.file for s in spans} >= {"instruction", "graders/tests/test_outputs.py"}
