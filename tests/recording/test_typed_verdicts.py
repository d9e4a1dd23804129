"""Verdicts read back from recordings as typed values: round trip, legacy keys, bad lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from termgym.analysis.audit import trace_from_log
from termgym.analysis.metrics import EpisodeSummary, summary_from_log
from termgym.errors import RecordingError
from termgym.grading import GradeReport, GraderResult, Verdict
from termgym.recording import EpisodeEnd, EpisodeWriter, read_episode
from tests.recording.conftest import make_header, make_step
from tui.model import EpisodeModel


def _report() -> GradeReport:
    def result(ruleset: str, passed: bool) -> GraderResult:
        return GraderResult(
            grader="plan", kind="pytest", ruleset=ruleset, score=1.0 if passed else 0.25,
            passed=passed, message="4 passed" if passed else "1 of 4", duration=0.5,
            details={"tests": 4},
        )  # fmt: skip

    return GradeReport(
        variant="contradicted",
        own="contradicted",
        verdicts={
            "contradicted": Verdict("contradicted", {"max_weight": 150}, (result("c", True),)),
            "original": Verdict("original", {"max_weight": 100}, (result("o", False),)),
        },
        episode_class="adapted",
    )


def _write_lines(path: Path, end: dict) -> Path:
    header = {"type": "header", "schema": 1, "episode_id": path.stem, "task": "fuel-planner",
              "task_version": 1, "variant": "contradicted", "rules_visible": {"max_weight": 150},
              "rules_enforced": {"max_weight": 150}, "seed": 0, "agent": "old", "backend": "docker",
              "versions": {}, "started": 1.0}  # fmt: skip
    step = {"type": "step", "index": 0, "mode": "command", "action": "ls", "output": "",
            "exit_code": 0, "duration": 0.1}  # fmt: skip
    path.write_text("".join(json.dumps(obj) + "\n" for obj in (header, step, end)))
    return path


def test_verdicts_written_by_the_environment_read_back_as_the_same_values(tmp_path: Path) -> None:
    report = _report()
    with EpisodeWriter(tmp_path, make_header("ep")) as writer:
        writer.step(make_step(0))
        writer.end(
            EpisodeEnd(
                reward=1.0, terminated=True, truncated=False,
                verdicts=report.to_dict()["verdicts"], episode_class="adapted",
            )
        )  # fmt: skip
    log = read_episode(writer.jsonl_path)
    assert log.end is not None and log.end.episode_class == "adapted" and log.end_line == 3
    back = GradeReport.from_wire(
        log.end.verdicts, variant="contradicted", episode_class="adapted", where=log.end_where
    )
    assert (
        back.matrix
        == report.matrix
        == {"contradicted": {"plan": True}, "original": {"plan": False}}
    )
    assert (back.passed, back.score, back.episode_class) == (True, 1.0, "adapted")
    assert back.verdicts["original"].results == report.verdicts["original"].results
    assert dict(back.verdicts["original"].rules) == {"max_weight": 100}
    assert back.verdicts["original"].score == 0.25


def test_an_old_recording_with_legacy_keys_and_verdicts_still_reads(tmp_path: Path) -> None:
    end = {"type": "end", "reward": 0.0, "terminated": True, "truncated": False,
           "verdicts": {"contradicted": {"passed": False, "score": 0.0, "details": {}},
                        "original": {"passed": True, "score": 1.0, "details": {}}},
           "shadow_class": "stale", "error": None}  # fmt: skip
    log = read_episode(_write_lines(tmp_path / "old.jsonl", end))
    assert log.skipped == [] and log.end is not None and log.end.episode_class == "stale"
    report = GradeReport.from_wire(log.end.verdicts, variant="contradicted", episode_class="stale")
    own = report.own_verdict
    assert own is not None and (own.passed, own.score, own.results, own.rules_known) == (
        False, 0.0, (), False,
    )  # fmt: skip
    summary = summary_from_log(log)
    assert (summary.episode_class, summary.passed, summary.error) == ("stale", False, None)
    assert summary.rules_changed is None  # the old line did not say which rules it graded


def test_the_end_line_class_is_read_from_cls_then_class(tmp_path: Path) -> None:
    end = {"type": "end", "reward": 1.0, "terminated": True, "truncated": False,
           "verdicts": {}, "class": "both"}  # fmt: skip
    log = read_episode(_write_lines(tmp_path / "cls.jsonl", end))
    assert log.end is not None and log.end.episode_class == "both"


def test_a_malformed_verdict_names_the_file_the_line_and_what_was_expected(tmp_path: Path) -> None:
    end = {"type": "end", "reward": 1.0, "terminated": True, "truncated": False, "cls": "adapted",
           "verdicts": {"contradicted": {"passed": True, "rules": {}},
                        "original": {"passed": "yes", "rules": {"max_weight": 100}}}}  # fmt: skip
    path = _write_lines(tmp_path / "bad.jsonl", end)
    log = read_episode(path)
    assert log.end is not None
    pattern = (
        rf"{path.name}: line 3: verdicts\['original'\]: passed: expected true, false or null, "
        r'found str "yes"'
    )
    with pytest.raises(RecordingError, match=pattern):
        GradeReport.from_wire(
            log.end.verdicts, variant="contradicted", episode_class="adapted", where=log.end_where
        )
    summary = summary_from_log(log)  # the report lists it apart instead of counting it
    assert summary.infra_error and summary.error is not None and "line 3" in summary.error
    assert summary.episode_class is None
    with pytest.raises(RecordingError, match="line 3"):
        trace_from_log(log)
    report, why = EpisodeModel(path).grading()
    assert report is None and why is not None and "expected true, false or null" in why


@pytest.mark.parametrize(
    ("verdict", "message"),
    [
        (
            {"score": 1.0},
            r'expected a verdict with "passed" or "results", found the keys \[.score.\]',
        ),
        (
            {"passed": True, "results": [{"grader": 3}]},
            r"results\[0\]: grader: expected the grader",
        ),
        ({"passed": True, "rules": [1]}, r"rules: expected a mapping of rule -> value, found list"),
        ("pass", r"expected a verdict mapping .*, found str"),
    ],
)
def test_each_malformed_verdict_shape_is_refused_with_what_was_found(verdict, message) -> None:
    with pytest.raises(RecordingError, match=message):
        GradeReport.from_wire({"original": verdict}, variant="original", episode_class=None)


def test_an_unknown_episode_class_is_refused() -> None:
    with pytest.raises(RecordingError, match="expected an episode class .*found 'clever'"):
        GradeReport.from_wire({}, variant="original", episode_class="clever")


def test_an_end_line_of_the_wrong_shape_is_noted_with_its_line(tmp_path: Path) -> None:
    end = {"type": "end", "reward": "1", "terminated": True, "truncated": False, "verdicts": {}}
    log = read_episode(_write_lines(tmp_path / "shape.jsonl", end))
    assert log.end is None
    assert log.skipped == [
        'line 3: end line has bad fields (reward: expected a number, found str "1")'
    ]
    end = {"type": "end", "reward": 1, "terminated": True, "truncated": False, "verdicts": [1]}
    log = read_episode(_write_lines(tmp_path / "list.jsonl", end))
    assert (
        log.end is None and "verdicts: expected a mapping of rule set -> verdict" in log.skipped[0]
    )


def test_results_lines_with_any_class_key_summarize_alike() -> None:
    base = {"task": "t", "variant": "contradicted", "passed": True}
    names = ("episode_class", "class", "shadow_class", "cls")
    assert {EpisodeSummary.from_dict({**base, k: "adapted"}).episode_class for k in names} == {
        "adapted"
    }
