"""SVG snapshots of the main screens, compared with the committed ones.

Regenerate after an intended change with TERMGYM_UPDATE_SNAPSHOTS=1 and review the SVGs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from termgym.tui.app import TermgymApp

from .conftest import settle, write_model_episode
from .reference_runs import episode_file

pytestmark = pytest.mark.asyncio

SNAPSHOTS = Path(__file__).parent / "snapshots"
CASES = {
    "run_view": ("run", []),
    "episode_view": ("fuel-0", ["g", "j", "j", "j", "j"]),
    "episode_vim_screen": ("fuel-0", ["g", "j", "j", "j", "j", "j"]),
    "rules_pane": ("fuel-0", ["3"]),
    "help": ("fuel-0", ["question_mark"]),
    # the recorded reference runs (reference_runs.py): the oracle reads the policy first...
    "oracle_reads_the_policy": ("ref:oracle", ["g", "j"]),
    # ... the memorizer writes its remembered values at once
    "memorizer_writes_at_once": ("ref:memorizer", ["g"]),
    # the model's transcript beside the terminal: its messages, reasoning and the probe
    "transcript_pane": ("model", ["g", "j", "4"]),
    # why an impossible episode failed: the conflict, the verdicts, the failing tests
    "failing_tests": ("ref:impossible-oracle", ["3"]),
    # the cheater's tamper evidence and its passing verdict
    "tamper_evidence": ("ref:impossible-cheater", ["3"]),
    # two agents on the same task and variant, side by side
    "compare_view": ("compare:impossible-oracle,impossible-cheater", []),
    # an 80x24 terminal: the class and reward columns, the episode view's panes and its why
    "run_view_80x24": ("run", []),
    "stale_why_80x24": ("ref:memorizer", ["3"]),
}
SIZES = {"run_view_80x24": (80, 24), "stale_why_80x24": (80, 24)}
"""The size of a case's terminal, when not 160x50."""


@pytest.mark.parametrize("name", sorted(CASES))
async def test_screen_matches_its_committed_snapshot(name: str, run_dir: Path) -> None:
    target, keys = CASES[name]
    other = None
    if target.startswith("ref:"):
        path = episode_file(target.removeprefix("ref:"))
    elif target.startswith("compare:"):
        left, right = target.removeprefix("compare:").split(",")
        path, other = episode_file(left), episode_file(right)
    elif target == "model":
        path = write_model_episode(run_dir)
    else:
        path = run_dir if target == "run" else run_dir / "episodes" / f"{target}.jsonl"
    app = TermgymApp(path, other)
    async with app.run_test(size=SIZES.get(name, (160, 50))) as pilot:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        svg = app.export_screenshot(title=f"termgym tui: {name}")
    snapshot = SNAPSHOTS / f"{name}.svg"
    if os.environ.get("TERMGYM_UPDATE_SNAPSHOTS") == "1" or not snapshot.exists():
        SNAPSHOTS.mkdir(exist_ok=True)
        snapshot.write_text(svg, encoding="utf-8")
        if os.environ.get("TERMGYM_UPDATE_SNAPSHOTS") != "1":
            pytest.fail(f"no snapshot yet: wrote {snapshot.name}; review it and commit it")
    assert svg == snapshot.read_text(encoding="utf-8"), (
        f"{name} differs from tests/tui/snapshots/{snapshot.name}; if intended, rerun with "
        "TERMGYM_UPDATE_SNAPSHOTS=1 and review the new SVG"
    )
