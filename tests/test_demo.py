"""`termgym demo`: both reference agents run, the report shows memorization, the TUI is named."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from termgym.cli import main


@pytest.mark.bwrap
def test_demo_runs_both_agents_and_reports_the_memorizer_stale(tmp_path, base_rootfs) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(
        main,
        [
            "demo",
            "-b",
            "bwrap",
            "--tasks",
            "text-report",
            "--variants",
            "original,contradicted",
            "--out",
            str(out),
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "backend bwrap (asked for with --backend)" in result.output
    assert "termgym tui " in result.output and (out / "report.html").exists()
    lines = {
        agent: [json.loads(x) for x in (out / agent / "results.jsonl").read_text().splitlines()]
        for agent in ("oracle", "memorizer")
    }
    oracle = {(r["task"], r["variant"]): r for r in lines["oracle"]}
    memo = {(r["task"], r["variant"]): r for r in lines["memorizer"]}
    assert oracle[("text-report", "contradicted")]["class"] == "adapted"
    assert memo[("text-report", "contradicted")]["class"] == "stale"
    assert memo[("text-report", "original")]["reward"] == 1.0


def test_demo_with_an_unknown_backend_fails_listing_the_known_ones() -> None:
    result = CliRunner().invoke(main, ["demo", "-b", "dokcer"])
    assert result.exit_code != 0
    assert "among bwrap, docker, local" in result.output and "'docker'" in result.output
