"""Fixtures for grader tests: a Docker engine with the base image, or a skip (a failure in CI)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def docker_engine(base_image: str) -> None:
    """A Docker engine with the base image (built if missing); skipped, or failed with CI=true,
    when no engine answers (the shared `base_image` fixture decides)."""
