"""Fixtures for grader tests: a Docker engine with the base image, or a skip (a failure in CI)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """Skip (or, with CI=true, fail) unless a Docker engine answers and the base image exists."""
    from termgym.sandbox import BASE_IMAGE
    from termgym.sandbox._engine import docker_answers, docker_client

    problem = None
    if not docker_answers():
        problem = "no Docker engine answers"
    else:
        try:
            docker_client().images.get(BASE_IMAGE)
        except Exception:  # noqa: BLE001 - any lookup failure means the image is unusable
            problem = f"the base image {BASE_IMAGE} is missing (run `termgym image build-base`)"
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{problem}, and CI=true requires Docker tests to run")
        pytest.skip(problem)
