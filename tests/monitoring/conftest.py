"""Fixtures for monitoring tests: promtool and a Prometheus server from Debian's package."""

from __future__ import annotations

import os
import shutil

import pytest

IN_CI = os.environ.get("CI") == "true"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        reason = f"`{name}` is not on PATH (Debian's prometheus package; make system installs it)"
        if IN_CI:
            pytest.fail(f"{name} is required with CI=true: {reason}")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def promtool() -> str:
    """promtool, or a skip (a failure with CI=true)."""
    return _tool("promtool")


@pytest.fixture(scope="session")
def prometheus_binary() -> str:
    """The Prometheus server binary, or a skip (a failure with CI=true)."""
    return _tool("prometheus")
