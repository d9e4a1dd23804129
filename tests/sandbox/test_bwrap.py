"""bwrap-only behaviour: limits from cgroups, a shell killed from outside, nothing left behind."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from termgym.sandbox import SandboxConfig, make_sandbox
from termgym.sandbox._bwrap import BwrapSandbox
from tests.sandbox.conftest import wait_until_running

pytestmark = pytest.mark.bwrap


@pytest.fixture
def bwrap_box(base_rootfs: str) -> Iterator[BwrapSandbox]:
    box = make_sandbox("bwrap", SandboxConfig(pids=100))
    assert isinstance(box, BwrapSandbox)
    box.start()
    yield box
    box.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="overlay roots and cgroups need root")
def test_root_is_a_writable_overlay_with_limits_and_no_capabilities(
    bwrap_box: BwrapSandbox,
) -> None:
    assert bwrap_box.mode == "overlay"
    assert {"pids", "memory"} <= set(bwrap_box.limits)
    assert bwrap_box.run("echo x > /etc/written && cat /etc/written").output == "x\n"
    assert bwrap_box.run("grep CapEff /proc/self/status").output.split()[1] == "0" * 16
    assert bwrap_box.run("awk 'NR > 2 {print $1}' /proc/net/dev").output.split() == ["lo:"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the shifted root filesystem is root's")
def test_without_a_docker_engine_root_in_the_sandbox_owns_the_debootstrapped_root(
    base_rootfs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no engine the base image comes from debootstrap's folder: as root, termgym must
    give bwrap its copy owned by the shifted ids, or root in the sandbox is a stranger to
    its own root filesystem (nothing in /etc, /var/lib written; the verifiers' zygote fails)."""
    from termgym.images._build import _forget_rootfs
    from termgym.images._engine import forget_clients
    from termgym.sandbox import BASE_IMAGE, rootfs_for

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    forget_clients()
    _forget_rootfs(BASE_IMAGE)
    try:
        root = rootfs_for(BASE_IMAGE)
        assert "debootstrap" in root.parts  # the engine's export is not what this tests
        with make_sandbox("bwrap", SandboxConfig(pids=100)) as box:
            done = box.run("mkdir /var/lib/mine && echo x > /etc/written && stat -c %u /etc")
            assert (done.exit_code, done.output) == (0, "0\n")
    finally:
        monkeypatch.undo()
        forget_clients()
        _forget_rootfs(BASE_IMAGE)


def test_shell_killed_from_outside_is_restarted_and_files_stay(bwrap_box: BwrapSandbox) -> None:
    bwrap_box.run("echo saved > /app/f")
    assert bwrap_box.shell is not None
    pid = bwrap_box.shell._child.pid  # type: ignore[union-attr]

    def kill_once_it_runs() -> None:
        try:
            wait_until_running(bwrap_box, "sleep 600.217")
        finally:
            os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_once_it_runs)
    killer.start()
    result = bwrap_box.run("sleep 600.217", timeout=200)
    killer.join()
    assert result.duration < 100  # seen when it died, not at the timeout
    assert result.restarted or result.exit_code == 129  # SIGHUP
    after = bwrap_box.run("cat /app/f")
    assert after.output.startswith("saved\n") and (result.restarted or after.restarted)


def test_close_leaves_no_mount_folder_or_cgroup(base_rootfs: str) -> None:
    box = make_sandbox("bwrap", SandboxConfig())
    assert isinstance(box, BwrapSandbox)
    with box:
        box.run("sleep 1000 &")
        home, dirs = box.home, list(box.cgroup.dirs if box.cgroup else [])
    assert home is not None and not home.exists()
    assert not any(folder.exists() for folder in dirs)
