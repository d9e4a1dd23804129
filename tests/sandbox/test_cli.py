"""The sandbox commands: `termgym sandbox run`, `termgym gc`, `termgym image`."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from termgym.cli import main


@pytest.mark.bwrap
def test_sandbox_run_keeps_state_between_commands(base_rootfs: str) -> None:
    result = CliRunner().invoke(main, ["sandbox", "run", "-b", "bwrap", "cd /tmp", "pwd", "exit 3"])
    assert result.exit_code == 0, result.output
    assert "/tmp\n" in result.output and "exit 3" in result.output and "restarted" in result.output


def test_image_build_stand_in_names_the_bases_it_knows_for_an_unknown_one() -> None:
    refused = CliRunner().invoke(main, ["image", "build-stand-in", "example.org/nothing:1"])
    assert refused.exit_code != 0
    assert "no local stand-in for 'example.org/nothing:1': expected one of" in refused.output
    assert "python:3.10|3.11|3.12|3.13" in refused.output


@pytest.mark.docker
def test_image_build_stand_in_is_cached(base_image: str) -> None:
    built = CliRunner().invoke(main, ["image", "build-stand-in", "debian:bookworm-slim"])
    assert built.exit_code == 0, built.output
    assert "debian:bookworm-slim -> termgym/tb-debian-12:" in built.output


@pytest.mark.docker
def test_image_build_base_is_cached_and_gc_reports_what_it_removed(base_image: str) -> None:
    built = CliRunner().invoke(main, ["image", "build-base"])
    assert built.exit_code == 0 and "up to date" in built.output
    swept = CliRunner().invoke(main, ["gc", "--dry-run"])  # others' leftovers are theirs
    assert swept.exit_code == 0 and "Would remove" in swept.output


def _dead_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid  # a pid no process has now


def _bwrap_leftover(cache: Path, name: str, run: str) -> Path:
    home = cache / "episodes" / name
    home.mkdir(parents=True)
    (home / "labels.json").write_text(json.dumps({"io.termgym.run": run}))
    (home / "owner.pid").write_text(str(_dead_pid()))
    return home


def test_gc_of_one_run_names_and_removes_only_that_runs_leftovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`termgym gc` removed every leftover on the machine, other users' runs included:
    `--run ID` keeps to one run's, and `--dry-run` names what would go and removes nothing."""
    mine = _bwrap_leftover(tmp_path, "termgym-mine-1", "run-mine")
    theirs = _bwrap_leftover(tmp_path, "termgym-theirs-1", "run-theirs")
    monkeypatch.setenv("TERMGYM_CACHE", str(tmp_path))
    monkeypatch.setattr("termgym.sandbox._bwrap.remove_stale_cgroups", lambda live: None)
    monkeypatch.setattr("termgym.sandbox._bwrap._older_than", lambda path, seconds: True)
    looked = CliRunner().invoke(main, ["gc", "--run", "run-mine", "--dry-run"])
    assert looked.exit_code == 0, looked.output
    assert "Would remove" in looked.output and "termgym-mine-1" in looked.output
    assert "termgym-theirs-1" not in looked.output and mine.exists()
    swept = CliRunner().invoke(main, ["gc", "--run", "run-mine"])
    assert swept.exit_code == 0 and "of run run-mine" in swept.output, swept.output
    assert not mine.exists() and theirs.exists()
    refused = CliRunner().invoke(main, ["gc", "--run", " "])
    assert refused.exit_code == 2 and "expected a run id" in refused.output


@pytest.mark.docker
def test_gc_of_one_run_removes_its_containers_whose_process_is_gone(base_image: str) -> None:
    import socket
    import uuid

    from termgym.images._engine import docker_client

    run = f"gc-test-{uuid.uuid4().hex[:8]}"
    client = docker_client()
    labels = {
        "io.termgym.sandbox": "1",
        "io.termgym.run": run,
        "io.termgym.host": socket.gethostname(),
        "io.termgym.pid": str(_dead_pid()),
    }
    left = client.containers.create(base_image, command=["true"], labels=labels)
    live = client.containers.create(  # its process runs: this one's
        base_image, command=["true"], labels={**labels, "io.termgym.pid": str(os.getpid())}
    )
    try:
        looked = CliRunner().invoke(main, ["gc", "--run", run, "--dry-run"])
        assert left.name in looked.output and live.name not in looked.output, looked.output
        client.containers.get(left.id)  # still there
        swept = CliRunner().invoke(main, ["gc", "--run", run])
        assert left.name in swept.output, swept.output
        assert [
            c.id
            for c in client.containers.list(all=True, filters={"label": f"io.termgym.run={run}"})
        ] == [live.id]
    finally:
        for container in (left, live):
            with contextlib.suppress(Exception):
                container.remove(force=True)


def test_gc_without_a_docker_engine_removes_the_bwrap_leftovers_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no engine `termgym gc` still sweeps bwrap's episode folders: it failed on the
    containers' half, after removing them unreported."""
    from termgym.images._build import _forget_rootfs
    from termgym.images._engine import forget_clients
    from termgym.sandbox import BASE_IMAGE

    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid no process has now
    leftover = tmp_path / "episodes" / "bwrap-left-1"
    leftover.mkdir(parents=True)
    (leftover / "owner.pid").write_text(str(gone.pid))
    monkeypatch.setenv("TERMGYM_CACHE", str(tmp_path))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setattr("termgym.sandbox._bwrap.remove_stale_cgroups", lambda live: None)
    forget_clients()
    _forget_rootfs(BASE_IMAGE)
    try:
        swept = CliRunner().invoke(main, ["gc"])
        assert swept.exit_code == 0, swept.output
        assert "Removed 1 leftover sandbox(es).\n  bwrap-left-1\n" in swept.output
        assert "No Docker engine answered" in swept.output
        assert not leftover.exists()
    finally:
        monkeypatch.undo()
        forget_clients()
        _forget_rootfs(BASE_IMAGE)


@pytest.mark.bwrap
def test_image_build_base_without_a_docker_engine_prepares_the_folder_bwrap_runs(
    base_rootfs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It named (and made) debootstrap's folder, not the copy owned by the shifted ids that
    bwrap runs as root: that copy was left to the first episode's start."""
    from termgym.images._build import _forget_rootfs
    from termgym.images._engine import forget_clients
    from termgym.sandbox import BASE_IMAGE, rootfs_for

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    forget_clients()
    _forget_rootfs(BASE_IMAGE)
    try:
        built = CliRunner().invoke(main, ["image", "build-base"])
        assert built.exit_code == 0, built.output
        assert f"Base root filesystem for bwrap: {rootfs_for(BASE_IMAGE)}\n" in built.output
    finally:
        monkeypatch.undo()
        forget_clients()
        _forget_rootfs(BASE_IMAGE)


@pytest.mark.bwrap
def test_image_build_base_force_without_a_docker_engine_says_it_rebuilt_nothing(
    base_rootfs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--force` was ignored without an engine: the command said it had prepared the folder
    and succeeded, as if it had rebuilt it."""
    from termgym.images._build import _forget_rootfs, debootstrap_home
    from termgym.images._engine import forget_clients
    from termgym.sandbox import BASE_IMAGE, rootfs_for

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    forget_clients()
    _forget_rootfs(BASE_IMAGE)
    try:
        built = CliRunner().invoke(main, ["image", "build-base", "--force"])
        kept = rootfs_for(BASE_IMAGE)
        assert built.exit_code == 1, built.output
        assert "--force rebuilds the Docker image, and no Docker engine answered" in built.output
        said = " ".join(built.output.split())
        assert str(kept.parent) in said and str(debootstrap_home()) in said
        assert (kept / "usr" / "bin" / "python3").exists()  # lost nothing
    finally:
        monkeypatch.undo()
        forget_clients()
        _forget_rootfs(BASE_IMAGE)
