"""The bwrap episode folders' parent: as root, a tmpfs termgym mounts once per host (under a
lock every process takes), never over what another process, or an older termgym, left
there; the folders of processes that are gone are removed first."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from termgym.isolation import unmount
from termgym.sandbox import _episodes

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


def _mounts_at(path: Path) -> list[str]:
    """The filesystem types mounted at `path`, in mount order."""
    found = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            fields = line.split()
            if fields[4] == str(path):
                found.append(fields[fields.index("-") + 1])
    return found


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cache of its own: its episodes folder not yet made, nor known to this process."""
    monkeypatch.setenv("TERMGYM_CACHE", str(tmp_path))
    monkeypatch.setattr(_episodes, "_READY", set())
    yield tmp_path
    folder = tmp_path / "episodes"
    while _mounts_at(folder):
        unmount(str(folder))


def _home(folder: Path, name: str, owner: int) -> Path:
    home = folder / name
    (home / "merged").mkdir(parents=True)
    (home / "owner.pid").write_text(str(owner))
    return home


def _ended_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)


def test_the_folder_is_a_tmpfs_of_its_own_open_to_the_sandboxes_users(cache: Path) -> None:
    folder = _episodes.ready_episodes_dir()
    assert folder == cache / "episodes"
    assert _mounts_at(folder) == ["tmpfs"]
    assert folder.stat().st_mode & 0o777 == 0o711
    assert _episodes.ready_episodes_dir() == folder
    assert _mounts_at(folder) == ["tmpfs"]  # once


def test_a_live_processs_folder_is_never_hidden(cache: Path) -> None:
    folder = cache / "episodes"
    live = _home(folder, "termgym-live-1", os.getpid())
    gone = _home(folder, "termgym-gone-1", _ended_pid())
    assert _episodes.ready_episodes_dir() == folder
    assert _mounts_at(folder) == []  # the live one's folder stays where it is, in view
    assert live.is_dir() and not gone.exists()


def test_what_processes_that_are_gone_left_is_removed_and_the_tmpfs_mounted(cache: Path) -> None:
    folder = cache / "episodes"
    gone = _home(folder, "termgym-gone-2", _ended_pid())
    assert _episodes.ready_episodes_dir() == folder
    assert _mounts_at(folder) == ["tmpfs"]
    assert not gone.exists() and list(folder.iterdir()) == []


def _ready(cache: str) -> str:
    os.environ["TERMGYM_CACHE"] = cache
    return str(_episodes.ready_episodes_dir())


def test_processes_starting_at_once_mount_one_tmpfs(cache: Path) -> None:
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        got = pool.map(_ready, [str(cache)] * 8)
    assert set(got) == {str(cache / "episodes")}
    assert _mounts_at(cache / "episodes") == ["tmpfs"]
