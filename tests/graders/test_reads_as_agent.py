"""The file, json and regex checks read the agent's files as the agent's user: through the
nests' launcher (its read mode, a small static program started by posix_spawn) where the
grading folder has it, else in a fork of the runner that becomes that user. Both must find
the same thing at every kind of path an agent can leave (a file, none, a folder, a file
only root may read, symlinks to each, a loop, a file behind a folder the agent cannot
enter, its own private file, text that is not UTF-8, lines ended by CR LF or CR, more than
the limit), and neither may
read what the agent's user could not.

Run here, as root, against the module the verifier imports (`termgym_agentexec`) beside a
copy of the launcher, as a grading folder holds them."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from termgym.verifier import AGENTEXEC

AGENT = 60000
LIMIT = 8


@pytest.fixture(scope="module")
def agentexec(launcher_folder: Path) -> ModuleType:
    """termgym_agentexec, loaded from a folder that holds the launcher too."""
    shutil.copy(AGENTEXEC, launcher_folder / "termgym_agentexec.py")
    spec = importlib.util.spec_from_file_location(
        "termgym_agentexec_reads", launcher_folder / "termgym_agentexec.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.privileged() and module.AGENT_UID == AGENT
    return module


@pytest.fixture
def work() -> Iterator[Path]:
    """What an agent may leave, in a folder every user can enter."""
    root = Path(tempfile.mkdtemp(prefix="termgym-work-"))
    root.chmod(0o755)
    try:
        (root / "plain").write_text("10\n")
        (root / "folder").mkdir()
        (root / "secret").write_text("root only\n")
        (root / "secret").chmod(0o600)
        (root / "closed").mkdir(mode=0o700)
        (root / "closed" / "inside").write_text("behind a closed folder\n")
        (root / "own").write_text("the agent's own\n")
        (root / "own").chmod(0o600)
        os.chown(root / "own", AGENT, AGENT)
        (root / "latin").write_bytes(b"caf\xe9 \xff\n")
        (root / "ends").write_bytes(b"a\r\nb\rc\n")  # line ends as csv and old Macs write
        (root / "long").write_text("\u00e9" * (LIMIT + 5))
        for name, target in (("to-secret", "secret"), ("to-plain", "plain"),
                             ("to-nothing", "nothing"), ("loop", "loop"),
                             ("to-inside", "closed/inside")):  # fmt: skip
            (root / name).symlink_to(target)
        yield root
    finally:
        shutil.rmtree(root)


NAMES = (
    "plain", "missing", "folder", "secret", "closed/inside", "own", "latin", "ends", "long",
    "to-secret", "to-plain", "to-nothing", "loop", "to-inside",
)  # fmt: skip


def _outcome(module: ModuleType, path: str, how: str) -> tuple[Any, ...]:
    try:
        if how == "read":
            return ("text", module.read_as_agent(path, LIMIT))
        return ("found", module.look_as_agent(path, how == "look", LIMIT))
    except OSError as exc:
        return ("raised", type(exc).__name__, exc.errno)


def test_the_launcher_reads_what_a_fork_as_the_agent_reads_and_nothing_more(
    agentexec: ModuleType, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawned = []
    real_spawn = os.posix_spawn

    def spawn(path: str, argv: list[str], *args: Any, **kwargs: Any) -> int:
        spawned.append(argv[:2])
        return real_spawn(path, argv, *args, **kwargs)

    monkeypatch.setattr(os, "posix_spawn", spawn)
    launched = {
        (name, how): _outcome(agentexec, str(work / name), how)
        for name in NAMES for how in ("read", "look", "exists")
    }  # fmt: skip
    assert spawned and all(argv == ["termgym-nest-read", "read"] for argv in spawned)
    monkeypatch.setattr(agentexec, "LAUNCHER", str(work / "no-launcher-here"))
    spawned.clear()
    forked = {
        (name, how): _outcome(agentexec, str(work / name), how)
        for name in NAMES for how in ("read", "look", "exists")
    }  # fmt: skip
    assert not spawned  # the fork, as the agent, read these
    assert launched == forked
    # and what the agent's user finds is what it could read itself, not what root could
    assert launched[("plain", "read")] == ("text", "10\n")
    assert launched[("own", "look")] == ("found", "the agent's own\n"[:LIMIT])
    assert launched[("to-plain", "look")] == ("found", "10\n")
    assert launched[("latin", "read")] == ("text", "caf\ufffd \ufffd\n")
    assert launched[("ends", "read")] == ("text", "a\nb\nc\n")
    assert launched[("long", "read")] == ("text", "\u00e9" * LIMIT)
    for name in ("secret", "to-secret"):
        assert launched[(name, "read")] == ("raised", "PermissionError", 13)
        assert launched[(name, "look")] == ("raised", "PermissionError", 13)
        assert launched[(name, "exists")] == ("found", "")
    for name in ("missing", "to-nothing", "closed/inside", "to-inside"):
        assert launched[(name, "look")] == ("found", None)
        assert launched[(name, "exists")] == ("found", None)
    assert launched[("missing", "read")] == ("raised", "FileNotFoundError", 2)
    assert launched[("to-inside", "read")] == ("raised", "PermissionError", 13)
    assert launched[("folder", "read")] == ("raised", "IsADirectoryError", 21)
    assert launched[("loop", "read")][:2] == ("raised", "OSError")  # ELOOP
