"""The sandbox commands: `termgym sandbox run`, `termgym gc`, `termgym image`."""

from __future__ import annotations

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
    swept = CliRunner().invoke(main, ["gc"])
    assert swept.exit_code == 0 and "leftover sandbox" in swept.output


def test_gc_without_a_docker_engine_removes_the_bwrap_leftovers_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no engine `termgym gc` still sweeps bwrap's episode folders: it failed on the
    containers' half, after removing them unreported."""
    from termgym.sandbox import BASE_IMAGE
    from termgym.sandbox._engine import forget_clients
    from termgym.sandbox._images import _forget_rootfs

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
    from termgym.sandbox import BASE_IMAGE, rootfs_for
    from termgym.sandbox._engine import forget_clients
    from termgym.sandbox._images import _forget_rootfs

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
    from termgym.sandbox import BASE_IMAGE, rootfs_for
    from termgym.sandbox._engine import forget_clients
    from termgym.sandbox._images import _forget_rootfs, debootstrap_home

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
