"""The episode view: stepping, the screen after a step in colour, search, play, rules, keys."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from rich.text import Text
from termgym.tui.app import TermgymApp
from termgym.tui.episode_screen import SPEEDS, EpisodeScreen
from termgym.tui.help_screen import HelpScreen
from termgym.tui.step_detail import StepDetail
from termgym.tui.step_list import StepList
from termgym.tui.terminal_view import TerminalView

from .conftest import HandMetronome, settle, shown_text, until

pytestmark = pytest.mark.asyncio


def _episode(run_dir: Path, name: str = "fuel-0") -> Path:
    return run_dir / "episodes" / f"{name}.jsonl"


def _cursor(app: TermgymApp) -> int:
    return app.screen.query_one(StepList).cursor


async def test_an_episode_opens_on_its_last_step(run_dir: Path) -> None:
    app = TermgymApp(_episode(run_dir))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, EpisodeScreen)
        assert _cursor(app) == 29
        text = shown_text(app)
        assert "step 29 (30 of 30)" in text and "> submit" in text
        assert (
            "fuel-0  adapted  reward 1.00  30 steps  fuel-planner · contradicted · synthetic"
            in text
        )


async def test_step_keys_move_through_the_steps_and_show_action_exit_code_and_timing(
    run_dir: Path,
) -> None:
    app = TermgymApp(_episode(run_dir))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        assert _cursor(app) == 0
        await pilot.press("j", "j", "j", "j", "j", "j", "j")
        await settle(pilot)
        assert _cursor(app) == 7
        text = shown_text(app)
        assert "step 7 (8 of 30)" in text and "exit 1" in text and "$ cat missing-7.txt" in text
        await pilot.press("k")
        await settle(pilot)
        text = shown_text(app)
        assert "step 6 (7 of 30)  keys  exit -" in text and "> <Esc>:wq<Enter>" in text
        await pilot.press("k", "k")
        await settle(pilot)
        assert "exit 0" in shown_text(app) and "$ python3 plan.py --leg 4" in shown_text(app)
        await pilot.press("down", "down", "end")
        assert _cursor(app) == 29
        await pilot.press("home")
        assert _cursor(app) == 0
        await pilot.press("G")
        assert _cursor(app) == 29


async def test_the_screen_after_a_step_is_replayed_with_its_colours(run_dir: Path) -> None:
    app = TermgymApp(_episode(run_dir))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("g", "j", "j", "j", "j")  # step 4: a command with coloured output
        await settle(pilot)
        view = app.screen.query_one(TerminalView)
        content = view.content
        assert isinstance(content, Text)
        assert "agent@sandbox:/app$ python3 plan.py --leg 4" in content.plain
        colours = {str(span.style) for span in content.spans}
        assert any("green" in c and "bold" in c for c in colours)  # the prompt's colour
        assert view.border_subtitle == ""  # replayed, not the plain fallback


async def test_the_alternate_screen_shows_while_vim_runs_and_is_gone_after(run_dir: Path) -> None:
    app = TermgymApp(_episode(run_dir))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("g", *"jjjjj")  # step 5 opens vim
        await settle(pilot)
        during = app.screen.query_one(TerminalView).plain
        assert during.startswith("max_weight: 150") and "agent@sandbox" not in during
        await pilot.press("j")  # step 6 quits it
        await settle(pilot)
        after = app.screen.query_one(TerminalView).plain
        assert "max_weight: 150" not in after
        assert "agent@sandbox:/app$ python3 plan.py --leg 4" in after


async def test_output_pane_and_rules_pane_show_the_step_output_and_the_verdicts(
    run_dir: Path,
) -> None:
    app = TermgymApp(_episode(run_dir))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("g", *"jjjjjjj", "2")
        await settle(pilot)
        assert "cat: missing-7.txt: No such file or directory" in shown_text(app)
        await pilot.press("3")
        await settle(pilot)
        text = shown_text(app)
        assert "contradicts the original" in text
        assert "original (shadow)" in text
        for expected in ("contradicted │ pass", "original     │ fail", "read graders/test_plan.py"):
            assert expected in text
        await pilot.press("1")
        await settle(pilot)
        assert "agent@sandbox" in shown_text(app)


async def test_withheld_rules_and_errors_are_marked(run_dir: Path) -> None:
    app = TermgymApp(_episode(run_dir, "fuel-2"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        text = shown_text(app)
        assert "withheld from the agent" in text
        assert "error: GraderError: grader crashed" in text


async def test_audit_hits_are_marked_next_to_their_step(run_dir: Path) -> None:
    app = TermgymApp(_episode(run_dir))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        lines = shown_text(app).splitlines()
        flagged = [line for line in lines if "⚑ python3" in line]
        assert len(flagged) == 1 and flagged[0].startswith("│    3 $")
        await pilot.press("g", "j", "j", "j")
        await settle(pilot)
        detail = app.screen.query_one(StepDetail)
        assert "⚑ audit leak: read graders/test_plan.py" in detail.plain


async def test_search_jumps_to_matching_steps_in_actions_and_output(run_dir: Path) -> None:
    app = TermgymApp(_episode(run_dir))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("g", "slash", *"No such file", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EpisodeScreen)
        assert screen.search_hits == [7, 20]  # found in the output only
        assert _cursor(app) == 7
        await pilot.press("n")
        assert _cursor(app) == 20
        await pilot.press("n")
        assert _cursor(app) == 7  # wraps around
        await pilot.press("N")
        assert _cursor(app) == 20
        await pilot.press("slash", *"LEG 12", "enter")
        await settle(pilot)
        assert _cursor(app) == 12  # actions, case-insensitive


async def test_space_plays_and_pauses_and_plus_minus_change_the_speed(run_dir: Path) -> None:
    metronome = HandMetronome()  # the test gives each tick of playback: no race with the clock
    app = TermgymApp(_episode(run_dir), metronome=metronome)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EpisodeScreen)
        await pilot.press("plus", "plus", "plus", "plus")
        assert SPEEDS[screen.speed_index] == 16.0 and not metronome.beating
        await pilot.press("space")  # at the last step, play starts over from the first
        await settle(pilot)
        assert screen.playing and "▶ 16 steps/s" in shown_text(app)
        assert metronome.interval == 1 / 16 and _cursor(app) == 0
        metronome.beat(9)  # what 16 steps/s plays in 0.6 s
        await pilot.press("space")
        stopped_at = _cursor(app)
        assert not screen.playing and stopped_at == 9
        assert not metronome.beating  # paused: no tick comes any more
        await settle(pilot)
        assert _cursor(app) == stopped_at
        await pilot.press("minus")
        assert SPEEDS[screen.speed_index] == 8.0
        assert not metronome.beating  # a new speed while paused does not start playing


async def test_playback_on_its_timer_runs_to_the_last_step_and_stops_there(
    run_dir: Path,
) -> None:
    app = TermgymApp(_episode(run_dir))  # the app's own timer paces it
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, EpisodeScreen)
        played: list[int] = []
        screen.watch(screen.query_one(StepList), "cursor", lambda at: played.append(at), init=False)
        await pilot.press("plus", "plus", "plus", "plus", "plus")  # 32 steps/s
        await pilot.press("space")
        await until(pilot, lambda: not screen.playing, "playback to stop at the last step")
        assert played == list(range(30))  # from the first step, through each, to the last
        assert _cursor(app) == 29 and "steps/s" not in shown_text(app)


async def test_question_mark_lists_every_key_of_the_view(run_dir: Path) -> None:
    app = TermgymApp(_episode(run_dir))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = shown_text(app)
        for binding in EpisodeScreen.BINDINGS:
            assert binding.description in text
        for _, description in EpisodeScreen.HELP_EXTRA:
            assert description in text
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, EpisodeScreen)
        footer = shown_text(app).splitlines()[-1]
        for main in ("Next", "Prev", "Play/pause", "Search", "Back", "Keys"):
            assert main in footer


async def test_back_from_an_episode_opened_alone_opens_its_run(run_dir: Path) -> None:
    app = TermgymApp(_episode(run_dir, "fuel-1"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert "run 20260101-000000-demo" in shown_text(app)


async def test_a_corrupt_recording_opens_with_what_is_readable_and_says_what_was_skipped(
    run_dir: Path,
) -> None:
    path = _episode(run_dir)
    lines = path.read_bytes().split(b"\n")
    lines[4] = b'{"type":"step","index":3,"mo'  # cut short
    lines.insert(8, b"\x00garbage")
    data = b"\n".join(lines)
    path.write_bytes(data[: data.rfind(b'{"type":"end"') + 30])  # and the end line cut too
    (path.with_suffix(".cast")).write_bytes(b"not a cast\n")
    app = TermgymApp(path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        text = shown_text(app)
        assert "skipped while reading:" in text
        assert "line 5" in text and "line 9" in text and "incomplete last line" in text
        screen = app.screen
        assert isinstance(screen, EpisodeScreen)
        assert len(screen.model) == 29 and "running" in text  # no end line survived
        assert "no cast: recorded text only" in text


async def test_a_10000_step_episode_opens_on_its_last_step(big_episode: Path) -> None:
    started = time.perf_counter()
    app = TermgymApp(big_episode)
    async with app.run_test(size=(160, 50)) as pilot:
        await until(  # painted before its screen is replayed: no settling first
            pilot, lambda: all(s in shown_text(app) for s in ("step 9999 (", "│ 9999 ✔")),
            "the last step shown", and_settle=False,
        )  # fmt: skip
        shown = time.perf_counter() - started
        assert _cursor(app) == 9999
        text = shown_text(app)
        assert "step 9999 (10000 of 10000)" in text
        assert "│ 9999 ✔" in text  # the last step is in view in the list
        await settle(pilot)
        coloured = time.perf_counter() - started
        assert "agent@sandbox:/app$" in app.screen.query_one(TerminalView).plain
        await pilot.press("k", "k", "pageup", "g")
        await settle(pilot)
        assert _cursor(app) == 0
    size = big_episode.stat().st_size + big_episode.with_suffix(".cast").stat().st_size
    print(
        f"\n10k-step episode ({size / 1e6:.1f} MB): shown in {shown:.2f} s, "
        f"coloured screen after {coloured:.2f} s"
    )


async def test_garbage_inside_the_cast_is_passed_over_and_the_screen_still_shows(
    run_dir: Path,
) -> None:
    cast = _episode(run_dir).with_suffix(".cast")
    lines = cast.read_bytes().split(b"\n")
    lines[3:3] = [b'[1.0, "o"]', b"{not json", b'[2.0, "o", 42]']
    cast.write_bytes(b"\n".join(lines))
    app = TermgymApp(_episode(run_dir))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("g", "j", "j", "j", "j")
        await settle(pilot)
        view = app.screen.query_one(TerminalView)
        assert "agent@sandbox:/app$ python3 plan.py --leg 4" in view.plain
        assert view.border_subtitle == ""
