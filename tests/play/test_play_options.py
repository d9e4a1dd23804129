"""`termgym play` with a variant or a backend that cannot be had says so in one line, as
its unknown task does; it ended in a traceback of the schedule or the registry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TERMGYM = str(Path(sys.executable).parent / "termgym")


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (["--variant", "contradictd"], "unknown variant 'contradictd'"),
        (["--variant", "impossible"], "the task does not offer the variant 'impossible'"),
        (["--backend", "dockr"], "got 'dockr'. Did you mean 'docker'?"),
    ],
)
def test_a_variant_or_backend_that_cannot_be_had_is_a_one_line_error(
    tmp_path: Path, option: list[str], expected: str
) -> None:
    done = subprocess.run(
        [TERMGYM, "play", "fuel-planner", *option, "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Error: " in done.stderr and expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
