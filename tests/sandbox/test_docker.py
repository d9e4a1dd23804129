"""Docker-only behaviour: lockdown, a container killed from outside, no engine, leftovers."""

from __future__ import annotations

import io
import os
import threading
import time
from collections.abc import Iterator

import pytest

import termgym.sandbox._docker as docker_backend
from termgym.errors import BackendUnavailable, SandboxCrashed, SandboxError
from termgym.images._engine import docker_client, forget_clients
from termgym.sandbox import SANDBOX_LABEL, SandboxConfig, collect_garbage, make_sandbox
from termgym.sandbox._copylimits import CopyLimits
from termgym.sandbox._docker import DockerSandbox
from tests.sandbox.conftest import wait_until_running

pytestmark = pytest.mark.docker


@pytest.fixture
def docker_box(base_image: str) -> Iterator[DockerSandbox]:
    box = make_sandbox("docker", SandboxConfig(labels={"io.termgym.test": "1"}))
    assert isinstance(box, DockerSandbox)
    box.start()
    yield box
    box.close()


def _sandboxes() -> list[str]:
    client = docker_client()
    listed = client.containers.list(all=True, filters={"label": SANDBOX_LABEL}, sparse=True)
    return [c.attrs["Names"][0].lstrip("/") for c in listed]


def test_container_is_locked_down(docker_box: DockerSandbox) -> None:
    attrs = docker_box.container.attrs
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none" and host["CapDrop"] == ["ALL"]
    assert host["Init"] is True and host["PidsLimit"] == 256
    assert host["Memory"] == 1024 << 20 and host["NanoCpus"] == 10**9
    assert "no-new-privileges" in host["SecurityOpt"]
    assert attrs["Config"]["Labels"][SANDBOX_LABEL] == "1"
    caps = docker_box.run("grep CapEff /proc/self/status").output.split()
    assert caps == ["CapEff:", "0000000000000000"]
    assert docker_box.run("ls /sys/class/net").output.split() == ["lo"]


def test_container_killed_from_outside_mid_command_raises_sandbox_crashed(
    docker_box: DockerSandbox,
) -> None:
    def kill_once_it_runs() -> None:
        try:
            wait_until_running(docker_box, "sleep 600.217")
        finally:
            docker_box.container.kill()

    killer = threading.Thread(target=kill_once_it_runs)
    killer.start()
    began = time.monotonic()
    with pytest.raises(SandboxCrashed, match="stopped while a command ran"):
        docker_box.run("sleep 600.217", timeout=200)
    killer.join()
    assert time.monotonic() - began < 100  # seen when it died, not at the timeout
    with pytest.raises(SandboxCrashed):
        docker_box.run("echo again")
    docker_box.close()
    assert docker_box.name not in _sandboxes()


def test_no_container_is_left_after_close(base_image: str) -> None:
    box = make_sandbox("docker", SandboxConfig())
    with box:
        assert box.run("echo up").output == "up\n"
        name = box.name  # type: ignore[attr-defined]
        assert name in _sandboxes()
    assert name not in _sandboxes()
    box.close()  # safe twice


def test_gc_removes_sandboxes_whose_owner_is_gone_and_spares_live_ones(
    docker_box: DockerSandbox,
) -> None:
    import socket
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()
    client = docker_client()
    host = socket.gethostname()
    orphan = {SANDBOX_LABEL: "1", "io.termgym.host": host, "io.termgym.pid": str(gone.pid)}
    leftover = client.containers.run(
        docker_box.config.image, ["sleep", "infinity"], detach=True, labels=orphan, init=True
    )
    removed = collect_garbage()
    assert leftover.name in removed and docker_box.name not in removed
    assert leftover.name not in _sandboxes() and docker_box.name in _sandboxes()


def test_no_docker_engine_gives_a_message_saying_how_to_start_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:  # noqa: ANN001
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing-here.sock")
    forget_clients()
    try:
        with pytest.raises(BackendUnavailable, match="No Docker engine answered.*make system"):
            make_sandbox("docker", SandboxConfig()).start()
    finally:
        monkeypatch.undo()
        forget_clients()


def test_missing_image_is_reported_without_trying_a_registry(base_image: str) -> None:
    began = time.monotonic()
    with pytest.raises(SandboxError, match="Expected image termgym/missing:never.*build-base"):
        make_sandbox("docker", SandboxConfig(image="termgym/missing:never")).start()
    assert time.monotonic() - began < 60  # a local lookup, not a registry's timeouts


def test_the_writable_layer_is_a_filesystem_of_the_disk_limit_removed_with_the_container(
    base_image: str,
) -> None:
    """As root beside a local engine that refuses --storage-opt (overlay2 over ext4, as
    here), the layer gets a filesystem of its own: ENOSPC at the limit, nothing left."""
    box = make_sandbox("docker", SandboxConfig(disk_mb=64))
    assert isinstance(box, DockerSandbox)
    box.start()
    try:
        if box.disk_limit == "engine":
            pytest.skip("this engine bounds the layer itself (--storage-opt size)")
        assert box.disk_limit == "filesystem", box._disk_why  # noqa: SLF001
        assert box.layer_disk is not None
        out = box.run("head -c 100M /dev/zero > /app/fill; echo status=$?; df -m / | tail -1")
        assert "No space left on device" in out.output and "status=1" in out.output
        assert int(out.output.split()[-5]) <= 64  # the size df reports for /
        layer, image = box.layer_disk.layer, box.layer_disk.image
    finally:
        box.close()
    assert not layer.exists() and not image.exists()


def test_without_a_filesystem_of_its_own_the_watchdog_ends_a_sandbox_past_its_limit(
    base_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback where no filesystem can be made (termgym not root): a poll."""
    from termgym.isolation import LayerDisk

    monkeypatch.setattr(LayerDisk, "make", classmethod(lambda cls, *args, **kw: "not root"))
    box = make_sandbox("docker", SandboxConfig(disk_mb=64))
    assert isinstance(box, DockerSandbox)
    box.start()
    try:
        if box.disk_limit == "engine":
            pytest.skip("this engine bounds the layer itself (--storage-opt size)")
        assert box.disk_limit == "watchdog"
        with pytest.raises(SandboxCrashed, match="disk limit"):
            box.run("head -c 400M /dev/urandom > /app/fill; sleep 30", timeout=60)
    finally:
        box.close()


SWAPPER = r"""
mkdir -p /app/w
cat > /tmp/swap.py <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
os.chdir("/app/w")
for i in range(200):
    open(f"f{i}", "w").write("x")
    os.mkfifo(f"p{i}")
while True:  # each file and its fifo trade names (renameat2's RENAME_EXCHANGE), over and over
    for i in range(200):
        libc.renameat2(-100, f"f{i}".encode(), -100, f"p{i}".encode(), 2)
PY
nohup python3 /tmp/swap.py >/dev/null 2>&1 &
sleep 1; ls /app/w | wc -l
"""


def test_a_file_swapped_for_a_fifo_during_a_live_copy_holds_neither_copy_nor_container(
    docker_box: DockerSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Live-state grading copies the work while the agent's processes run. The engine's copy
    looks at a file, then opens it: a process that swapped it for a fifo in between held that
    open until something wrote to the fifo (forever), and with it the engine's lock of the
    container: the copy passed its time, and the container could be neither killed nor
    removed (its processes ran on after the episode, and the engine's copy helper with them).
    The container is paused while the engine copies."""
    monkeypatch.setattr(docker_backend, "ENGINE_DEADLINE", 5.0)
    assert docker_box.run(SWAPPER).output.split()[-1] == "400"
    for _ in range(10):
        began = time.monotonic()
        docker_box.export_paths(["/app"], io.BytesIO(), CopyLimits(seconds=3))
        assert time.monotonic() - began < 3
    assert docker_box.run("echo running").output == "running\n"  # unpaused after each copy
    docker_box.close()
    assert docker_box.name not in _sandboxes()


def test_the_engines_files_bound_into_the_container_grow_no_larger_than_the_disk_limit(
    base_image: str,
) -> None:
    """/etc/hosts, /etc/hostname and /etc/resolv.conf are the engine's files on the host's
    disk, bound in writable: what the agent wrote to them was outside every disk limit (200
    MiB into /etc/hosts under a limit of 64, as much as the host's disk held)."""
    box = make_sandbox("docker", SandboxConfig(disk_mb=64, labels={"io.termgym.test": "1"}))
    assert isinstance(box, DockerSandbox)
    with box:
        for name in ("hosts", "hostname", "resolv.conf"):
            box.run(f"head -c 100M /dev/zero > /etc/{name}", timeout=60)
        sizes = box.run("stat -c %s /etc/hosts /etc/hostname /etc/resolv.conf").output.split()
        attrs = box.container.attrs
        on_host = [attrs[key] for key in ("HostsPath", "HostnamePath", "ResolvConfPath")]
        assert [os.stat(path).st_size for path in on_host] == [int(size) for size in sizes]
        assert all(int(size) <= 64 << 20 for size in sizes), sizes
