"""A program of the agent's, run by the tests in its nest, sees only its own processes.

Every program the graders start runs in a nest: a pid namespace of its own, but the
verifier's /proc (a nest cannot mount a proc of its own under the verifier's covered one).
Listed there, every process of the verifier showed, with its command line: the runner,
the tests, what they run (before: the lister below counted them, on both backends). The
verifier's /proc now shows a process only to its own user and to termgym's group, which
the agent's programs drop; and a process of another user namespace (the tests', on a
snapshot, whose programs run as root) to none of them (docs/security.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from termgym.importing import import_tasks
from tests.security.conftest import ADVERSARY, put_file

LISTER = """\
import os
def ns(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None
mine = ns("self")
foreign = [p for p in os.listdir("/proc") if p.isdigit() and ns(p) != mine]
print(f"FOREIGN {len(foreign)}")
"""
"""Counts the processes it can list that are not in its own pid namespace."""

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign" / "snapshot"


def _foreign(info: dict) -> int:
    (result,) = info["verdicts"]["contradicted"]["results"]
    found = re.search(r"FOREIGN (\d+)", result["message"])
    assert found is not None, result["message"]
    return int(found.group(1))


def test_the_graded_program_lists_no_process_of_the_verifier(attack) -> None:
    episode = attack(ADVERSARY)
    episode.run(put_file("/app/answer.py", LISTER))
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    assert _foreign(info) == 0
    assert reward == 0.0


@pytest.fixture(scope="module")
def greeter(tmp_path_factory: pytest.TempPathFactory, docker_available: None) -> Path:
    out = tmp_path_factory.mktemp("imported")
    import_tasks([FOREIGN / "tb-installed-greeter"], out, "terminal-bench")
    return out / "tb-installed-greeter"


GREET_IF_ALONE = LISTER.replace(
    'print(f"FOREIGN {len(foreign)}")',
    'import sys\nprint(f"Hello, {sys.argv[1]}!" if not foreign else f"FOREIGN {len(foreign)}")',
)
"""A `greet` that greets only when it lists no process outside its own pid namespace."""


def test_a_program_the_snapshot_tests_start_lists_none_of_theirs(attack, greeter: Path) -> None:
    """On a snapshot the agent's programs run as root, as the tests do: they see no process
    of the tests' (another user namespace's) nor of the runner. (Before: it listed them,
    and did not greet.)"""
    episode = attack(greeter, variant="original")
    episode.run(put_file("/usr/local/bin/greet", "#!/usr/bin/python3.11\n" + GREET_IF_ALONE,
                         "755"))  # fmt: skip
    _, info = episode.submit()
    assert info["error"] is None, info["error"]
    tests = info["verdicts"]["original"]["results"][0]["details"]["tests"]
    assert tests["test_the_command_greets"] == "PASSED", tests
