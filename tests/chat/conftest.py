"""Fixtures of the chat, async, rollout and adapter tests: a quick task on bwrap."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

CARGO = str(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cargo-limit")
"""A task that grades in well under a second: write the policy's weight limit to answer."""

READ_LIMIT = "sed -n 's/^max_weight: *//p' policy.txt > answer"
"""The honest solution: read the limit from the (rendered) policy."""


def bash_call(command: str, call_id: str = "c1") -> dict:
    """An assistant message calling the bash tool."""
    arguments = json.dumps({"command": command})
    function = {"name": "bash", "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


@pytest.fixture
def cargo(base_rootfs: str) -> str:
    """The cargo-limit task folder, with bwrap ready."""
    return CARGO


@pytest.fixture
def run_id() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"
