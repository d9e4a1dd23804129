"""Fixtures of the fault suite: a run id of the test's own (its folder's name, on every
sandbox the run starts)."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def run_id() -> str:
    """A run id unique to the test."""
    return f"fault-{uuid.uuid4().hex[:10]}"
