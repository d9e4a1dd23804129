"""Fixtures of the fault suite: a run id of the test's own (its folder's name, on every
sandbox the run starts), and the processes it starts as a terminal would start them."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator

import pytest


@pytest.fixture
def run_id() -> str:
    """A run id unique to the test."""
    return f"fault-{uuid.uuid4().hex[:10]}"


@pytest.fixture(autouse=True)
def hangup_as_a_terminal_leaves_it() -> Iterator[None]:
    """The processes a fault test starts get SIGHUP's default disposition, as from a terminal.
    A test session started under `nohup` ignores SIGHUP, every child inherits the ignore
    across exec, and termgym rightly keeps an ignored SIGHUP ignored (termgym._stopping), so
    its SIGHUP faults would reach nothing."""
    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, before)
