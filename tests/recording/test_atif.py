"""ATIF trajectories: what the models refuse, and another producer's trajectory imported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from termgym.errors import RecordingError
from termgym.recording import (
    export_episode,
    export_run,
    import_atif,
    read_episode,
    read_run,
    validate_atif,
    write_synthetic_episode,
)

TERMINUS = {
    "schema_version": "ATIF-v1.5",
    "session_id": "3f9e-run",
    "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": "some-model"},
    "steps": [
        {"step_id": 1, "source": "system", "message": "You are an AI assistant ..."},
        {"step_id": 2, "source": "user", "message": "Write the limit to /app/answer."},
        {
            "step_id": 3,
            "source": "agent",
            "message": "Reading the policy.",
            "reasoning_content": "The file states it.",
            "tool_calls": [
                {
                    "tool_call_id": "call_1_1",
                    "function_name": "bash_command",
                    "arguments": {"keystrokes": "cat policy.txt\n", "duration": 0.1},
                },
                {
                    "tool_call_id": "call_1_2",
                    "function_name": "bash_command",
                    "arguments": {"keystrokes": "C-c", "duration": 0.1},
                },
            ],
            "observation": {"results": [{"content": "max_weight: 150\n$ "}]},
            "metrics": {"prompt_tokens": 900, "completion_tokens": 40},
        },
        {
            "step_id": 4,
            "source": "agent",
            "message": "Done.",
            "tool_calls": [
                {"tool_call_id": "c2", "function_name": "mark_task_complete", "arguments": {}}
            ],
        },
    ],
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["steps"][1].update(step_id=5), "steps\\[1\\].step_id: expected 2, got 5"),
        (lambda d: d["steps"][1].update(tool_calls=[]), "only an agent step has it"),
        (lambda d: d.update(schema_version="ATIF-v9"), "schema_version"),
        (lambda d: d["steps"][0].update(colour="red"), "steps.0.colour: Extra inputs"),
        (
            lambda d: d["steps"][2]["observation"]["results"].append({"source_call_id": "nope"}),
            "source_call_id 'nope', which is not a tool call of step 3",
        ),
        (lambda d: d["steps"][0].update(timestamp="yesterday"), "expected ISO 8601"),
    ],
)
def test_an_invalid_trajectory_is_refused_naming_the_field(change, expected: str) -> None:
    data = json.loads(json.dumps(TERMINUS))
    validate_atif(data)
    change(data)
    with pytest.raises(RecordingError, match=expected):
        validate_atif(data, "t.json")


def test_another_producers_trajectory_imports_as_a_replayable_keys_episode(tmp_path: Path) -> None:
    source = tmp_path / "trajectory.json"
    source.write_text(json.dumps(TERMINUS))
    with pytest.raises(RecordingError, match="names no termgym task.*--task"):
        import_atif([source], tmp_path / "run")
    (path,) = import_atif([source], tmp_path / "run", task="cargo-limit")
    (episode,) = read_run(tmp_path / "run").episodes
    assert episode.path == path and episode.header.task == "cargo-limit"
    assert episode.header.extra["mode"] == "keys"
    assert [(s.mode, s.action) for s in episode.steps] == [
        ("keys", "cat policy.txt<Enter>"),
        ("keys", "<C-c>"),
    ]
    assert episode.steps[0].output == "max_weight: 150\n$ "
    assert episode.end is not None and episode.end.terminated
    assert "not graded" in (episode.end.error or "")  # until replayed into a real episode
    transcript = episode.end.extra["transcript"]
    assert [e["role"] for e in transcript] == ["system", "user", "assistant", "assistant"]
    assert transcript[2]["reasoning"] == "The file states it."


def test_an_exported_episode_keeps_termgyms_fields_in_extra(tmp_path: Path) -> None:
    write_synthetic_episode(tmp_path / "run", steps=5, variant="withheld", episode_class="both")
    (path,) = export_run(tmp_path / "run")
    data = json.loads(path.read_text())
    ours = data["extra"]["termgym"]
    assert (ours["variant"], ours["rules_visible"]) == ("withheld", {})
    assert ours["rules_enforced"] == {"max_weight": 150, "reserve_pct": 10}
    assert set(ours["verdicts"]) == {"withheld", "original"} and ours["seed"] == 0
    # an agent without a model: every action step says no LLM call made it
    actions = [s for s in data["steps"] if s.get("tool_calls")]
    assert actions and all(s["llm_call_count"] == 0 for s in actions)
    assert actions[0]["timestamp"].startswith("2026-")


REFERENCE = Path(__file__).parents[1] / "tui" / "fixtures" / "reference"


def episode_file(name: str) -> Path:
    [path] = (REFERENCE / name / "episodes").glob("*.jsonl")
    return path


def test_a_reported_conflict_and_the_tamper_evidence_survive_export_and_import(tmp_path) -> None:
    for name in ("impossible-oracle", "impossible-cheater"):
        source = read_episode(episode_file(name))
        exported = export_episode(source, tmp_path / "atif")
        [back] = import_atif([exported], tmp_path / f"back-{name}")
        log = read_episode(back)
        assert log.end is not None and source.end is not None
        assert log.end.conflict == source.end.conflict and log.end.tamper == source.end.tamper
    assert read_episode(episode_file("impossible-oracle")).end.conflict  # one reported


def test_an_undecodable_byte_of_the_agents_is_exported_and_imported_back(tmp_path: Path) -> None:
    """A lone surrogate (an agent's undecodable byte, or its tool call's JSON escape) in an
    action and its output: UTF-8 cannot hold it, and the export stopped there with a
    UnicodeEncodeError (not a RecordingError), ending `termgym run --atif` with it."""
    from termgym.recording import EpisodeEnd, EpisodeHeader, EpisodeWriter, StepRecord

    header = EpisodeHeader(
        episode_id="t--original--0", task="t", task_version=1, variant="original",
        rules_visible={}, rules_enforced={}, seed=0, agent="llm", backend="bwrap",
        versions={}, started=1_790_000_000.0, extra={"instruction": "x"},
    )  # fmt: skip
    with EpisodeWriter(tmp_path / "run", header) as writer:
        writer.step(StepRecord(0, "command", "cat \udcff \ud800", "out \udcfe", 0, 0.01))
        writer.end(EpisodeEnd(reward=0.0, terminated=True, truncated=False))
    (path,) = export_run(tmp_path / "run")
    assert "\\udcff" in path.read_text(encoding="utf-8")  # JSON's escape of it
    [back] = import_atif([path], tmp_path / "back")
    (step,) = read_episode(back).steps
    assert (step.action, step.output) == ("cat \udcff \ud800", "out \udcfe")


def test_export_to_a_folder_that_cannot_be_made_or_of_no_run_says_so(tmp_path: Path) -> None:
    """An --out that could not be made ended in a traceback (exit 1); a folder of no
    finished episode printed '0 trajectories' and exited 1 without saying why."""
    from click.testing import CliRunner

    from termgym.cli import main

    blocker = tmp_path / "file"
    blocker.write_text("")
    run = str(REFERENCE / "oracle")
    result = CliRunner().invoke(main, ["export", "atif", run, "--out", str(blocker / "atif")])
    assert result.exit_code == 2, result.output
    assert "--out" in result.output and "expected a folder that can be written" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(main, ["export", "atif", str(empty)])
    assert result.exit_code == 1
    assert f"expected a finished episode in {empty / 'episodes'}" in result.output
