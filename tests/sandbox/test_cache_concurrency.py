"""Shared caches under several processes at once: an entry is made by one process while the
others wait for it; a build killed halfway (its mounts left in its staging folder, as
debootstrap leaves /proc) is cleared by the next maker, never one of a live process; and
termgym's docker network, missing, is made once when processes ask for it together."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from termgym.images._cachelock import clear, making, settle, staging_for
from termgym.isolation import mount, mounts_below, unmount_below

AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


def _make(target: str, barrier: multiprocessing.synchronize.Barrier, said: str) -> None:
    """What a builder does: under the lock, make the entry in a staging folder unless it is
    there, and rename it into place."""
    folder = Path(target)
    barrier.wait()
    with making(folder):
        if not (folder / ".complete").exists():
            staging = staging_for(folder)
            (staging / "root").mkdir(parents=True)
            for index in range(200):  # long enough that two makers would overlap
                (staging / "root" / f"f{index}").write_text(str(os.getpid()))
            (staging / ".complete").write_text(str(os.getpid()))
            settle(staging, folder)
            _append(said, "made")
    _append(said, "found " + (folder / ".complete").read_text())


def _append(path: str, line: str) -> None:
    with open(path, "a") as handle:
        handle.write(f"{os.getpid()} {line}\n")


def test_processes_asking_at_once_make_an_entry_once(tmp_path: Path) -> None:
    target, said = tmp_path / "cache" / "entry", str(tmp_path / "said.txt")
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    workers = [context.Process(target=_make, args=(str(target), barrier, said)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [worker.exitcode for worker in workers] == [0] * 4
    lines = Path(said).read_text().splitlines()
    assert len([line for line in lines if line.endswith(" made")]) == 1, lines
    assert len({line.split()[-1] for line in lines if " found " in line}) == 1, lines
    assert sorted(p.name for p in target.parent.iterdir()) == ["entry", "entry.lock"]


def _ended_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)


@AS_ROOT
def test_a_killed_builds_staging_is_unmounted_and_removed_a_live_ones_kept(
    tmp_path: Path,
) -> None:
    target = tmp_path / "local-bases" / "debian-bookworm-x"
    target.parent.mkdir()
    dead = target.with_name(f"{target.name}.tmp{_ended_pid()}")
    live = target.with_name(f"{target.name}.tmp{os.getppid()}")  # pytest's parent: alive
    (dead / "rootfs" / "proc").mkdir(parents=True)
    (dead / "rootfs" / "proc" / "under").write_text("hidden by the mount\n")
    (live / "rootfs").mkdir(parents=True)
    assert mount("tmpfs", str(dead / "rootfs" / "proc")) == ""
    try:
        (dead / "rootfs" / "proc" / "on-the-mount").write_text("x")
        with making(target):
            mine = staging_for(target)
        assert not dead.exists() and mounts_below(str(tmp_path)) == []
        assert live.is_dir() and mine.name == f"{target.name}.tmp{os.getpid()}"
    finally:
        unmount_below(str(tmp_path))


@AS_ROOT
def test_a_half_made_entry_is_cleared_through_its_mounts_and_replaced(tmp_path: Path) -> None:
    target = tmp_path / "rootfs" / "abc"
    (target / "root" / "proc").mkdir(parents=True)  # no .complete: a build killed halfway
    assert mount("tmpfs", str(target / "root" / "proc")) == ""
    try:
        (target / "root" / "proc" / "self").write_text("what a removal must never walk into")
        with making(target):
            staging = staging_for(target)
            (staging / "root").mkdir(parents=True)
            (staging / ".complete").write_text("new")
            settle(staging, target)
        assert (target / ".complete").read_text() == "new"
        assert mounts_below(str(tmp_path)) == [] and not staging.exists()
    finally:
        unmount_below(str(tmp_path))
    clear(target)
    assert not target.exists()


def _network(name: str, address: str, barrier: multiprocessing.synchronize.Barrier) -> None:
    from termgym.images._engine import docker_client
    from termgym.sandbox import _dockernet

    _dockernet.NETWORK = name  # the test's own network, never the one other work uses
    barrier.wait()
    assert _dockernet.docker_network(docker_client(), address) == name


@pytest.mark.docker
def test_processes_asking_at_once_make_the_network_once(docker_available: None) -> None:
    from termgym.images._engine import docker_client

    name = f"termgym-test-{uuid.uuid4().hex[:8]}"
    address = f"unix:///{name}.sock"  # a bridge of its own (`bridge_for`), not termgym0
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    workers = [context.Process(target=_network, args=(name, address, barrier)) for _ in range(4)]
    client = docker_client()
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
        assert [worker.exitcode for worker in workers] == [0] * 4
        made = [n for n in client.api.networks(names=[name]) if n["Name"] == name]
        assert len(made) == 1, made
    finally:
        for found in client.api.networks(names=[name]):
            if found["Name"] == name:
                client.api.remove_network(found["Id"])
