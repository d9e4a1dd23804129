"""Shared fixtures: a Docker engine (skipped outside CI when none answers, failing in CI), bwrap,
the base image."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI") == "true"


def _unavailable(what: str, reason: str) -> NoReturn:
    if IN_CI:
        pytest.fail(f"{what} is required with CI=true: {reason}")
    pytest.skip(f"{what} unavailable: {reason}")


def built_by_every_compiler(source: Path, folder: Path) -> dict[str, Path]:
    """`source` (one of termgym's static programs) built by every compiler the host has, as
    termgym builds it and with every warning an error: compiler name -> program."""
    import shutil
    import subprocess

    from termgym.sandbox._static import COMPILERS, FLAGS

    found = {name: path for name in COMPILERS if (path := shutil.which(name))}
    if not found:
        _unavailable("A C compiler", "none of " + ", ".join(COMPILERS) + " is installed")
    built = {}
    for name, path in found.items():
        out = folder / name
        done = subprocess.run(
            [path, *FLAGS, "-Wall", "-Werror", "-o", str(out), "-"],
            input=source.read_bytes(), capture_output=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, (name, done.stderr.decode()[-2000:])
        built[name] = out
    return built


@pytest.fixture(scope="session")
def docker_available() -> None:
    """Skip (outside CI) or fail (CI=true) unless a Docker engine answers."""
    from termgym.errors import BackendUnavailable
    from termgym.images._engine import docker_client

    try:
        docker_client()
    except BackendUnavailable as exc:
        _unavailable("A Docker engine", str(exc))


@pytest.fixture(scope="session")
def harbor_python() -> str:
    """Harbor's virtualenv (`make harbor` makes it); skip (outside CI) or fail without it."""
    from termgym.agents.harbor import installed_python

    found = installed_python()
    if found is None:
        _unavailable("Harbor's virtualenv", "`make harbor` made none (no Python >= 3.12?)")
    return str(found)


@pytest.fixture(scope="session")
def bwrap_available() -> None:
    """Skip (outside CI) or fail (CI=true) unless bubblewrap can make its namespaces."""
    from termgym.sandbox import bwrap_works

    if not bwrap_works():
        _unavailable("bubblewrap", "`bwrap` is missing or cannot create namespaces here")


@pytest.fixture(scope="session")
def base_image(docker_available: None) -> str:
    """The base image, built if missing (cached: seconds when it exists)."""
    from termgym.sandbox import BASE_IMAGE, build_base

    build_base()
    return BASE_IMAGE


@pytest.fixture(scope="session")
def base_rootfs(bwrap_available: None) -> Iterator[str]:
    """The base image's root filesystem folder for bwrap (exported or debootstrapped once)."""
    from termgym.sandbox import BASE_IMAGE, rootfs_for

    yield str(rootfs_for(BASE_IMAGE))


@pytest.fixture(autouse=True)
def _marked_requirements(request: pytest.FixtureRequest) -> None:
    """Tests marked `docker` / `bwrap` get the matching availability check."""
    if request.node.get_closest_marker("docker"):
        request.getfixturevalue("docker_available")
    if request.node.get_closest_marker("bwrap"):
        request.getfixturevalue("bwrap_available")


BACKENDS = [
    pytest.param("docker", marks=pytest.mark.docker),
    pytest.param("bwrap", marks=pytest.mark.bwrap),
]
"""Parameters of a test that runs on both isolating backends (use the `backend` fixture)."""


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """docker or bwrap, with what each needs ready (the base image, its root filesystem)."""
    name: str = request.param
    request.getfixturevalue("base_image" if name == "docker" else "base_rootfs")
    return name
