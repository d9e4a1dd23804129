"""Sandbox fixtures: each test runs on docker and on bwrap, in a fresh sandbox."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

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


def wait_until_running(box: Sandbox, command: str, patience: float = 60.0) -> None:
    """Return once `command` (its argv joined by spaces) runs in `box`, seen from outside:
    docker lists the container's processes, bwrap's are the host's below its shell. What the
    test does next then meets it running, however late a busy machine started it."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        if command in _commands(box):
            return
        time.sleep(0.05)
    raise AssertionError(f"{command!r} never ran in the {box.backend} sandbox: {_commands(box)}")


def _commands(box: Sandbox) -> list[str]:
    if box.backend == "docker":
        listing = box.container.top()  # type: ignore[attr-defined]
        column = listing["Titles"].index("CMD")
        return [row[column] for row in listing["Processes"]]
    shell = box.shell._child.pid  # type: ignore[attr-defined]
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and _below(int(entry.name), shell):
                found.append((entry / "cmdline").read_bytes().rstrip(b"\0").replace(b"\0", b" "))
        except (OSError, ValueError):
            continue  # gone meanwhile
    return [argv.decode("utf-8", "replace") for argv in found]


def _below(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat[stat.rfind(")") + 2 :].split()[1])
    return False
