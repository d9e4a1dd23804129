"""The TUI in an 80x24 terminal, and what it shares with the HTML report: the run view shows
each episode's class and reward, the episode view fits its panes, every pane has the same
border, `?` lists each key once, and the disclosure intervals are the report's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from termgym.tui.app import TermgymApp
from termgym.tui.episode_screen import EpisodeScreen
from termgym.tui.help_screen import HelpScreen
from termgym.tui.run_screen import RunScreen
from textual.widgets import DataTable

from termgym.recording import RunWriter, write_synthetic_episode
from termgym.report import load_run, render_html

from ..report.conftest import write_episode
from .conftest import settle, shown_text
from .reference_runs import FIXTURES

pytestmark = pytest.mark.asyncio
SMALL = (80, 24)
TASKS = ("interactive-setup", "service-config", "rate-limiter", "cron-schedule")
VARIANTS = ("original", "contradicted", "withheld")


@pytest.fixture
def long_names(tmp_path: Path) -> Path:
    """A run whose episodes are named as the runner names them (task--variant--index)."""
    run = RunWriter(tmp_path / "runs", run_id="small", header={"agent": "memorizer"})
    for number, (task, variant) in enumerate((t, v) for t in TASKS for v in VARIANTS):
        write_synthetic_episode(
            run.run_dir, f"{task}--{variant}--000", steps=3, task=task, variant=variant,
            agent="memorizer", seed=number, started=1_790_000_000.0 + number,
            episode_class=None if variant == "original" else "stale",
        )  # fmt: skip
    return run.run_dir


async def test_the_run_view_at_80x24_shows_each_episode_s_class_and_reward(long_names) -> None:
    app = TermgymApp(long_names)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, RunScreen)
        text = shown_text(app)
        header = next(line for line in text.splitlines() if " episode " in line)
        assert "class" in header and "reward" in header, header
        table = app.screen.query_one(DataTable)
        assert table.row_count == 12
        for line in text.splitlines():
            if "--000" in line:  # each row shows what the episode came to, and its reward
                assert re.search(r"--000 +(stale|passed|failed) +\d\.\d\d", line), line
        # episodes graded under their own rules alone say how they did, in words
        assert "passed 4" in text or "failed 4" in text
        assert "no class" not in text


async def test_the_episode_view_at_80x24_fits_its_panes_and_titles_its_outcome() -> None:
    path = next((FIXTURES / "memorizer" / "episodes").glob("*.jsonl"))
    app = TermgymApp(path)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, EpisodeScreen)
        title = shown_text(app).splitlines()[0]
        assert "fuel-planner--contradicted--000  stale  reward 0.25" in title
        for name in ("#screen", "#rules"):
            await pilot.press("1" if name == "#screen" else "3")
            await settle(pilot)
            pane = app.screen.query_one(name)
            assert pane.region.right <= SMALL[0], (name, pane.region)
        text = shown_text(app)
        assert "why: Stale: passed the original rules" in text


async def test_every_pane_has_the_same_border(long_names) -> None:
    path = long_names / "episodes" / "interactive-setup--contradicted--000.jsonl"
    app = TermgymApp(path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        borders = {
            name: app.screen.query_one(name).styles.border_top[0]
            for name in ("#steps", "#detail", "#screen", "#output", "#rules", "#transcript")
        }
        assert set(borders.values()) == {"round"}, borders
        titles = {n: app.screen.query_one(n).border_title for n in ("#rules", "#transcript")}
        assert titles == {"#rules": "rules", "#transcript": "transcript"}


@pytest.mark.parametrize("where", ["run", "episode"])
async def test_the_keys_screen_lists_each_key_once(long_names, where: str) -> None:
    target = long_names if where == "run" else next((long_names / "episodes").glob("*.jsonl"))
    app = TermgymApp(target)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        keys = [k for keys, _ in app.screen.bindings for k in keys.split(" / ")]
        assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)
        assert "q" in keys and "?" in keys


async def test_the_disclosure_intervals_are_the_html_report_s(tmp_path: Path) -> None:
    """One bootstrap, seeded, for the run view and the report: the same run, the same
    intervals (they differed: [43.8, 100.0] in the TUI against [40.7, 100.0])."""
    run = tmp_path / "run"
    for number in range(24):  # those that write the old limit are disclosed
        leaked, passed = number % 4 == 0 or number % 5 == 0, number % 3 != 0
        write_episode(
            run, task=f"task-{number % 8}", variant="contradicted", agent="memorizer",
            passed=passed, episode_class="adapted" if passed else "stale",
            actions=[f"python3 plan.py --max-weight {100 if leaked else 150}"],
        )  # fmt: skip
    report = load_run(run)
    split = report.disclosure["memorizer"]
    intervals = [e.format() for e in (split.disclosed, split.undisclosed)]
    other = load_run(run, resamples=300).disclosure["memorizer"]  # the TUI's draw, before
    assert intervals != [e.format() for e in (other.disclosed, other.undisclosed)]
    assert all(i in render_html(report) for i in intervals)
    app = TermgymApp(run)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        text = shown_text(app)
        assert all(i in text for i in intervals), (intervals, text)
