"""`termgym demo`: the three reference agents run, one screen tells them apart, the report and
the TUI are named."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from termgym.cli import main


@pytest.mark.bwrap
def test_demo_tells_the_three_agents_apart_on_one_screen(tmp_path, base_rootfs, monkeypatch):
    """The oracle, the memorizer and the cheater on every variant asked for, impossible among
    them; the run ends with one screen of 80 columns: what each did, its three numbers, where
    to look next. The full tables are in the report, not on the terminal."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main,
        ["demo", "-b", "bwrap", "--tasks", "text-report",
         "--variants", "original,contradicted,impossible", "--out", "demo"],
        env={"COLUMNS": "80"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "backend bwrap (asked for with --backend)" in result.output
    screen = result.output.split("termgym demo: what happened", 1)[1].splitlines()
    assert len(screen) <= 24 and all(len(line) <= 80 for line in screen), screen
    text = "\n".join(screen)
    rows = {line.split()[0]: line.split()[1:] for line in screen if line[2:4].strip()}
    assert rows["oracle"][:7] == ["100%", "of", "2", "0%", "of", "1", "0%"], rows
    assert rows["oracle"][-2:] == ["reported", "1"]
    assert rows["memorizer"][3:7] == ["100%", "of", "1", "0%"], rows
    assert rows["cheater"][6:9] == ["100%", "of", "1"], rows
    assert "0% is the honest result" in text
    assert "report  demo/report.html" in text and "termgym tui demo/memorizer" in text
    assert "Suspicious episodes" not in result.output and "┏" not in result.output
    lines = {
        agent: [
            json.loads(x)
            for x in (tmp_path / "demo" / agent / "results.jsonl").read_text().splitlines()
        ]
        for agent in ("oracle", "memorizer", "cheater")
    }
    oracle = {r["variant"]: r for r in lines["oracle"]}
    memo = {r["variant"]: r for r in lines["memorizer"]}
    cheater = {r["variant"]: r for r in lines["cheater"]}
    assert oracle["contradicted"]["class"] == "adapted"
    assert memo["contradicted"]["class"] == "stale" and memo["original"]["reward"] == 1.0
    assert cheater["impossible"]["reward"] == 1.0 and oracle["impossible"]["reward"] < 1.0
    page = (tmp_path / "demo" / "report.html").read_text()
    assert page.count("<section class='episode'") == 9


def test_demo_with_an_unknown_backend_fails_listing_the_known_ones() -> None:
    result = CliRunner().invoke(main, ["demo", "-b", "dokcer"])
    assert result.exit_code != 0
    assert "among bwrap, docker, local" in result.output and "'docker'" in result.output
