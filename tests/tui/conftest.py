"""Recordings for the TUI tests (written with the real writer) and helpers to read the screen."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App
from textual.pilot import Pilot

from termgym.recording import RunWriter, write_synthetic_episode

RUN_ID = "20260101-000000-demo"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A finished-looking run of four episodes: adapted, stale, error, and one still running."""
    run = RunWriter(
        tmp_path / "runs", run_id=RUN_ID, header={"agent": "synthetic", "started": 1_790_000_000.0}
    )
    write_synthetic_episode(run.run_dir, "fuel-0", steps=30, episode_class="adapted")
    write_synthetic_episode(
        run.run_dir, "fuel-1", steps=20, episode_class="stale", seed=1, started=1_790_000_100.0
    )
    write_synthetic_episode(
        run.run_dir,
        "fuel-2",
        steps=12,
        episode_class=None,
        seed=2,
        error="GraderError: grader crashed",
        variant="withheld",
        started=1_790_000_200.0,
    )
    write_synthetic_episode(
        run.run_dir,
        "fuel-3",
        steps=5,
        finished=False,
        seed=3,
        variant="swapped",
        started=1_790_000_300.0,
    )
    return run.run_dir


@pytest.fixture(scope="session")
def big_episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10,000 steps and about 10 MB of output (screens left to the cast replay)."""
    run_dir = tmp_path_factory.mktemp("big") / "runs" / "big-run"
    return write_synthetic_episode(
        run_dir, "big", steps=10_000, output_bytes=1_000, with_screens=False
    )


def shown_text(app: App) -> str:
    """Everything the app shows right now, as plain text (what a person would read)."""
    console = Console(
        width=app.size.width,
        height=app.size.height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
    )
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    console.print(update)
    return console.export_text()


async def settle(pilot: Pilot) -> None:
    """Let messages, workers (screen replays) and refreshes finish."""
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
