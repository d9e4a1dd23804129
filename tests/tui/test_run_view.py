"""The run view: every episode with its class, sorting, filtering, opening, live updates."""

from __future__ import annotations

from pathlib import Path

import pytest
from termgym.tui.app import TermgymApp
from termgym.tui.episode_screen import EpisodeScreen
from termgym.tui.run_screen import RunScreen
from termgym.tui.terminal_view import TerminalView
from textual.widgets import DataTable

from termgym.recording import EpisodeHeader, EpisodeWriter, synthetic_steps

from .conftest import settle, shown_text, until

pytestmark = pytest.mark.asyncio


def _column(app: TermgymApp, name: str) -> list[str]:
    table = app.screen.query_one(DataTable)
    return [
        str(table.get_cell_at((r, list(table.columns).index(name)))) for r in range(table.row_count)
    ]


async def test_every_episode_is_listed_with_its_task_variant_agent_reward_and_class(
    run_dir: Path,
) -> None:
    app = TermgymApp(run_dir)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, RunScreen)
        text = shown_text(app)
        for expected in (
            "fuel-0",
            "fuel-1",
            "fuel-2",
            "fuel-3",
            "fuel-planner",
            "contradicted",
            "withheld",
            "swapped",
            "synthetic",
            "1.00",
        ):
            assert expected in text
        classes = dict(zip(_column(app, "episode"), _column(app, "class"), strict=True))
        assert classes == {
            "fuel-0": "adapted",
            "fuel-1": "stale",
            "fuel-2": "error",
            "fuel-3": "running",
        }
        assert "4 episodes" in text and "error 1" in text


async def test_s_cycles_the_sort_column_and_r_reverses_it(run_dir: Path) -> None:
    app = TermgymApp(run_dir)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        assert _column(app, "class") == ["adapted", "error", "running", "stale"]
        for _ in range(7):  # reward, flags, variant, task, agent, steps, -> episode
            await pilot.press("s")
        assert _column(app, "episode") == ["fuel-0", "fuel-1", "fuel-2", "fuel-3"]
        await pilot.press("r")
        assert _column(app, "episode") == ["fuel-3", "fuel-2", "fuel-1", "fuel-0"]
        for _ in range(7):  # -> steps
            await pilot.press("s")
        await pilot.press("r")
        assert _column(app, "steps") == ["5", "12", "20", "30"]
        await settle(pilot)
        assert "sorted by steps" in shown_text(app)


async def test_a_filter_keeps_matching_episodes_and_c_clears_it(run_dir: Path) -> None:
    app = TermgymApp(run_dir)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await pilot.press(*"withheld", "enter")
        await settle(pilot)
        assert _column(app, "episode") == ["fuel-2"]
        assert "filter 'withheld'" in shown_text(app)
        await pilot.press("c")
        assert len(_column(app, "episode")) == 4


async def test_enter_opens_the_episode_and_escape_comes_back(run_dir: Path) -> None:
    app = TermgymApp(run_dir)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("s", "enter")  # sorted by episode: fuel-0 first
        await settle(pilot)
        assert isinstance(app.screen, EpisodeScreen)
        assert app.screen.model.header is not None
        assert app.screen.model.header.episode_id == "fuel-0"
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, RunScreen)


async def test_a_run_being_written_shows_new_episodes_and_steps_as_they_arrive(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "live-run"
    steps = list(synthetic_steps(6))
    header = EpisodeHeader(
        "live-0",
        "fuel-planner",
        1,
        "original",
        {"max_weight": 100},
        {"max_weight": 100},
        0,
        "agent-x",
        "docker",
        {},
        1_790_000_000.0,
    )
    writer = EpisodeWriter(run_dir, header)
    writer.step(steps[0])
    app = TermgymApp(run_dir)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        assert _column(app, "steps") == ["1"]
        for step in steps[1:4]:
            writer.step(step)
        second = EpisodeWriter(
            run_dir, EpisodeHeader(**{**header.__dict__, "episode_id": "live-1"})
        )
        listed = {"live-0": "4", "live-1": "0"}

        def shown_steps() -> dict[str, str]:
            return dict(zip(_column(app, "episode"), _column(app, "steps"), strict=True))

        await until(pilot, lambda: shown_steps() == listed, f"the run view to list {listed}")
        assert shown_steps() == listed
        await pilot.press("s", "enter")  # open live-0 and watch it
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EpisodeScreen) and len(screen.model) == 4
        assert "● live" in shown_text(app)
        writer.step(steps[4])
        await until(pilot, lambda: len(screen.model) == 5, "the fifth step read")
        assert len(screen.model) == 5
        assert screen.query_one("#steps").cursor == 4  # followed the newest step
        view = screen.query_one(TerminalView)
        assert "python3 plan.py --leg 4" in view.plain  # replayed from the grown cast
        assert view.border_subtitle == ""
        from termgym.recording import EpisodeEnd

        writer.end(EpisodeEnd(reward=1.0, terminated=True, truncated=False, episode_class="both"))
        await until(pilot, lambda: not screen.model.live, "the end line read")
        assert "both" in shown_text(app) and "● live" not in shown_text(app)
    writer.close()
    second.close()


async def test_a_corrupt_episode_in_a_run_is_listed_and_what_was_skipped_is_said(
    run_dir: Path,
) -> None:
    path = run_dir / "episodes" / "fuel-1.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: data.rfind(b'{"type":"end"') + 25])  # the end line cut short
    app = TermgymApp(run_dir)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        classes = dict(zip(_column(app, "episode"), _column(app, "class"), strict=True))
        assert classes["fuel-1"] == "running"  # no readable end line
        assert "skipped: fuel-1.jsonl: line 22: incomplete last line" in shown_text(app)


async def test_the_disclosure_line_splits_pass_rates_and_d_toggles_it(tmp_path: Path) -> None:
    from termgym.tui.disclosure_panel import DisclosurePanel

    from termgym.recording import EpisodeEnd

    run = tmp_path / "run"
    for number, (passed, says) in enumerate([(True, "100"), (True, "100"), (False, "")]):
        header = EpisodeHeader(
            episode_id=f"e{number}", task=f"t{number}", task_version=1, variant="withheld",
            rules_visible={}, rules_enforced={"max_weight": 100}, seed=number, agent="llm",
            backend="none", versions={}, started=float(number),
        )  # fmt: skip
        probe = [{"step": 1, "role": "probe", "content": f"the limit was {says} kg"}]
        with EpisodeWriter(run, header) as writer:
            writer.end(
                EpisodeEnd(
                    reward=1.0 if passed else 0.0, terminated=True, truncated=False,
                    verdicts={"withheld": {"passed": passed, "rules": {"max_weight": 100}}},
                    episode_class=None, extra={"transcript": probe if says else []},
                )
            )  # fmt: skip
    app = TermgymApp(run)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(DisclosurePanel)
        text = shown_text(app)
        assert "disclosed llm: episodes 100.0%" in text and "n=2 vs not 0.0%" in text
        assert "(+100.0 pts" in text and "probe disclosures: ask 2/2" in text
        await pilot.press("d")
        assert not panel.display
