"""The worked example in docs/task-format.md is the order-discounts fixture task, file for file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from termgym.check import check_tasks
from termgym.tasks import load_task

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "task-format.md"
FIXTURE = ROOT / "tests" / "fixtures" / "tasks" / "order-discounts"
BLOCK = re.compile(r"^\*\*order-discounts/(\S+)\*\*.*?^```\w*\n(.*?)^```", re.S | re.M)


def test_every_file_of_the_worked_example_is_shown_verbatim():
    shown = dict(BLOCK.findall(DOC.read_text()))
    assert shown, "no worked-example blocks found in docs/task-format.md"
    for rel, content in shown.items():
        assert (FIXTURE / rel).read_text() == content, f"docs differ from the fixture: {rel}"
    files = {p.relative_to(FIXTURE).as_posix() for p in FIXTURE.rglob("*") if p.is_file()}
    assert files - set(shown) == {"graders/orders.csv"}  # said to be a copy of files/orders.csv
    assert (FIXTURE / "graders/orders.csv").read_text() == shown["files/orders.csv"]


@pytest.mark.docker
def test_the_worked_example_passes_check(docker_engine):
    rows = check_tasks([load_task(FIXTURE)], "docker", jobs=3)
    assert [r for r in rows if r.ok is False] == []
    classes = {(r.variant, r.solution): r.episode_class for r in rows}
    assert classes[("contradicted", "oracle")] == "adapted"
    assert classes[("contradicted", "memorized")] == "stale"
