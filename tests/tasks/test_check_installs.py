"""The `untampered` row of `termgym check`: an oracle that changed the toolchain fails it,
except in a task that grants its agent Docker's default capabilities (an imported task,
whose own solution may `apt-get install` as under its harness), where the change is
reported; a protected file changed fails it in every task. No sandbox here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from termgym.check import _tamper_row
from termgym.sandbox import Change
from termgym.tasks import TamperEvidence, load_task

INSTALLED = TamperEvidence(toolchain=(Change("/usr/bin/primer3_core", "added", "file"),))
EDITED = TamperEvidence(
    tests=(Change("/app/tests/test_plan.py", "changed", "file"),), toolchain=INSTALLED.toolchain
)


@pytest.mark.parametrize(
    ("capabilities", "evidence", "ok"),
    [("none", INSTALLED, False), ("default", INSTALLED, None), ("default", EDITED, False)],
)
def test_installs_are_reported_only_where_the_agent_may_install(
    task_folder: Callable[..., Path], capabilities: str, evidence: TamperEvidence, ok: bool | None
) -> None:
    task = load_task(task_folder(spec={"limits": {"capabilities": capabilities}}))
    row = _tamper_row(task, "original", "oracle", evidence)
    assert (row.expected, row.ok) == ("untampered", ok)
    assert "/usr/bin/primer3_core added" in row.why
    assert ("reported" in row.why) is (ok is None)
