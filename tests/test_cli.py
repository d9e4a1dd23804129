"""The `termgym` group: each command imported when it runs, under the name it is listed by."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from termgym.cli import COMMANDS, main


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_listed_command_answers_to_its_name(name: str) -> None:
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert f"Usage: main {name} " in result.output or f"Usage: main {name}\n" in result.output


def test_the_tui_command_starts_without_importing_the_runner() -> None:
    """What `termgym tui` imports before its first paint: not the runner, tasks or sandboxes."""
    code = (
        "import sys\n"
        "from termgym.cli import main\n"
        "try:\n    main(['tui', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('termgym.run', 'termgym.tasks', 'termgym.sandbox') "
        "if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
