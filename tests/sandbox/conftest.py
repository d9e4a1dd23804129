"""Sandbox fixtures: each test runs on docker and on bwrap, in a fresh sandbox."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from termgym.sandbox import Sandbox, SandboxConfig, make_sandbox


@pytest.fixture
def make_box(backend: str) -> Iterator[Callable[..., Sandbox]]:
    """Start sandboxes of the test's backend (config fields as keywords); all closed after."""
    made: list[Sandbox] = []

    def make(**fields: object) -> Sandbox:
        box = make_sandbox(backend, SandboxConfig(**fields))  # type: ignore[arg-type]
        made.append(box)
        box.start()
        return box

    yield make
    for box in made:
        box.close()


@pytest.fixture
def box(make_box: Callable[..., Sandbox]) -> Sandbox:
    """A started sandbox with the default config and a small output limit."""
    return make_box(output_limit=200_000)
