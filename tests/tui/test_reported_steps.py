"""Steps an agent's own log reports (an agent inside the sandbox running its own commands)
are listed under the step of termgym's they ran in, marked as the agent's account."""

from __future__ import annotations

from pathlib import Path

import pytest
from termgym.tui.app import TermgymApp
from termgym.tui.model import EpisodeModel
from termgym.tui.step_detail import StepDetail
from termgym.tui.step_list import StepList

from termgym.recording import EpisodeEnd, EpisodeWriter, StepRecord

from ..recording.conftest import make_header, make_step
from .conftest import settle, shown_text


def _reported(index: int, within: int, action: str, exit_code: int | None) -> StepRecord:
    return StepRecord(
        index=index, mode="command", action=action, output=f"out of {action}\n",
        exit_code=exit_code, duration=0.0, t=within + 0.5, source="agent", within=within,
    )  # fmt: skip


def _episode(tmp_path: Path) -> Path:
    with EpisodeWriter(tmp_path, make_header("codex-0", agent="harbor:codex")) as writer:
        for i in range(3):
            writer.step(make_step(i))
        writer.step(_reported(0, 1, "cat /app/policy/fuel_policy.json", 0))
        writer.step(_reported(1, 1, "python3 /app/plan.py", None))
        writer.end(EpisodeEnd(reward=1.0, terminated=True, truncated=False))
    return writer.jsonl_path


def test_the_model_puts_each_reported_step_after_the_step_it_ran_in(tmp_path: Path) -> None:
    model = EpisodeModel(_episode(tmp_path))
    shown = [(model.step(i).source, model.step(i).action) for i in range(len(model))]
    assert shown == [
        ("termgym", "echo 0"),
        ("termgym", "echo 1"),
        ("agent", "cat /app/policy/fuel_policy.json"),
        ("agent", "python3 /app/plan.py"),
        ("termgym", "echo 2"),
    ]
    assert [i for i in range(len(model)) if model.matches(i, "echo 2")] == [4]
    assert [i for i in range(len(model)) if model.matches(i, "out of cat")] == [2]


@pytest.mark.asyncio
async def test_a_reported_step_is_shown_as_the_agents_account_inside_its_step(
    tmp_path: Path,
) -> None:
    app = TermgymApp(_episode(tmp_path))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        steps = app.screen.query_one(StepList)
        assert "↳0" in steps.line_text(2).plain and "cat /app/policy" in steps.line_text(2).plain
        assert "↳" not in steps.line_text(4).plain
        await pilot.press("g", "j", "j")
        await settle(pilot)
        detail = app.screen.query_one(StepDetail).plain
        assert detail.startswith("reported step 0, inside step 1 (3 of 5)  command  exit 0")
        assert "the agent's own log says it ran this inside that step" in detail
        assert "termgym did not run or see it" in detail
        assert "↳1 $   ·       ·   python3 /app/p" in shown_text(app)
