"""The sandbox commands: `termgym sandbox run`, `termgym gc`, `termgym image`."""

from __future__ import annotations

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
