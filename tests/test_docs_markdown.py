"""The documentation's code blocks close where they are meant to: a fence line that closes a
block holds the backticks alone. Text after them (```` ``` After a kill -9 ````) makes no
closing fence in Markdown, so the block ran on and swallowed the prose after it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^(`{3,})(.*)$")


def unclosed_fences(text: str) -> list[str]:
    """Lines that should close a code block but carry text after the backticks, and a block
    left open at the end."""
    problems, opened = [], None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence is None:
            continue
        ticks, rest = fence.groups()
        if opened is None:
            opened = number
        elif len(ticks) >= 3 and not rest.strip():
            opened = None
        else:
            problems.append(f"line {number}: text after a closing fence: {line!r}")
    if opened is not None:
        problems.append(f"line {opened}: a code block that never closes")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_code_block_closes_on_a_fence_of_its_own(page: Path) -> None:
    assert unclosed_fences(page.read_text()) == []
