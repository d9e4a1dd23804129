"""Fixtures for grader tests: a Docker engine with the base image, or a skip (a failure in CI);
a grading folder's copy of the nests' launcher, for tests that run the verifier's modules here."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from termgym.grading._launcher import LAUNCHER, nest_launcher
from tests.conftest import _unavailable


@pytest.fixture(scope="session")
def docker_engine(base_image: str) -> None:
    """A Docker engine with the base image (built if missing); skipped, or failed with CI=true,
    when no engine answers (the shared `base_image` fixture decides)."""


@pytest.fixture(scope="module")
def launcher_folder() -> Iterator[Path]:
    """A folder holding the nests' launcher as a grading folder does (root's, 0700), for the
    verifier's modules run here as root; skipped (failed in CI) when not root or where no
    compiler builds the launcher."""
    if os.geteuid() != 0:
        _unavailable("The verifier's modules as root", "they switch users and map ids: run as root")
    program = nest_launcher()
    if program is None:
        _unavailable("The nests' launcher", "no C compiler here builds a static program")
    folder = Path(tempfile.mkdtemp(prefix="termgym-launcher-"))
    try:
        (folder / LAUNCHER).write_bytes(program)
        (folder / LAUNCHER).chmod(0o700)
        yield folder
    finally:
        shutil.rmtree(folder)
