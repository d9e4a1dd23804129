"""run.json and results.jsonl: written and read by termgym.recording alone, older lines kept."""

from __future__ import annotations

import json
from pathlib import Path

from termgym.recording import (
    RESULTS_FILE,
    ResultLine,
    append_result,
    last_results,
    read_results,
    read_run_header,
    write_run_header,
)


def test_a_result_line_round_trips_and_the_last_line_of_an_episode_is_its_result(
    tmp_path: Path,
) -> None:
    failed = ResultLine("a-0", "a", "contradicted", seed=3, status="infra-error", error="gone")
    passed = ResultLine(
        "a-0", "a", "contradicted", seed=3, reward=1.0, episode_class="adapted",
        steps=4, phases={"grading": 0.5}, attempts=2,
    )  # fmt: skip
    other = ResultLine("b-0", "b", "original", status="agent-error", error="ValueError: x")
    for line in (failed, passed, other):
        append_result(tmp_path, line)
    assert read_results(tmp_path) == [failed, passed, other]
    assert last_results(tmp_path) == {"a-0": passed, "b-0": other}
    written = json.loads((tmp_path / RESULTS_FILE).read_text().splitlines()[1])
    assert written["class"] == "adapted" and written["phases"] == {"grading": 0.5}


def test_an_older_line_reads_with_defaults_and_a_broken_one_is_left_out_with_a_note(
    tmp_path: Path,
) -> None:
    (tmp_path / RESULTS_FILE).write_text(
        json.dumps({"episode_id": "a-0", "task": "a", "variant": "original", "status": "ok"})
        + "\n"
        + json.dumps({"episode_id": "b-0", "task": "b", "variant": "original", "status": "x"})
        + "\n"
        + json.dumps({"episode_id": "d-0", "task": "d", "variant": "orignal"})
        + "\n"
        + '{"episode_id": "c-0", "ta'
    )
    skipped: list[str] = []
    [old] = read_results(tmp_path, skipped)
    assert old == ResultLine("a-0", "a", "original")
    assert old.attempts == 1 and old.phases == {} and old.episode_class is None
    assert len(skipped) == 3
    assert skipped[0].startswith(f"{RESULTS_FILE}:2: status: expected one of ok, agent-error")
    assert "expected a variant" in skipped[1] and "Did you mean 'original'?" in skipped[1]
    assert skipped[2].startswith(f"{RESULTS_FILE}:4: ")
    assert read_results(tmp_path / "nothing-here") == []


def test_a_result_appended_after_a_line_cut_short_is_read(tmp_path: Path) -> None:
    # a run killed as it wrote its results line, then resumed
    (tmp_path / RESULTS_FILE).write_text('{"episode_id": "a-0", "ta')
    lost = ResultLine("b-0", "b", "original", status="infra-error", error="gone")
    append_result(tmp_path, lost)
    skipped: list[str] = []
    assert read_results(tmp_path, skipped) == [lost]
    assert len(skipped) == 1 and skipped[0].startswith(f"{RESULTS_FILE}:1: ")


def test_run_json_is_replaced_whole_and_read_back(tmp_path: Path) -> None:
    write_run_header(tmp_path, {"run_id": "r", "agent": "oracle"})
    write_run_header(tmp_path, {"run_id": "r", "agent": "oracle", "finished": 2.0})
    header = read_run_header(tmp_path)
    assert header is not None and header["finished"] == 2.0 and header["agent"] == "oracle"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]
    (tmp_path / "run.json").write_text("{not json")
    skipped: list[str] = []
    assert read_run_header(tmp_path, skipped) is None and "run.json unreadable" in skipped[0]
