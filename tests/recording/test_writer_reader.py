"""Episodes written with EpisodeWriter read back whole, field by field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from termgym.errors import RecordingError
from termgym.recording import (
    SCHEMA_VERSION,
    EpisodeEnd,
    EpisodeWriter,
    NullRecorder,
    Recorder,
    RunWriter,
    StepRecord,
    latest_run,
    read_episode,
    read_run,
)

from .conftest import make_header, make_step, write_episode


def test_every_field_round_trips_through_the_jsonl_file(tmp_path: Path) -> None:
    header = make_header(extra={"grader": "tests"})
    step = StepRecord(
        index=0,
        mode="keys",
        action="\x1b:wq\r",
        output="tab\there ünïcode ✓\n",
        exit_code=None,
        duration=0.25,
        timed_out=True,
        truncated=True,
        screen="line\n  indented",
        raw=b"\x1b[31mred\x1b[0m",
        t=1.5,
        restarted=True,
    )
    end = EpisodeEnd(
        reward=0.5,
        terminated=False,
        truncated=True,
        verdicts={"original": {"passed": True, "score": 1.0, "details": {"n": 1}}},
        episode_class="stale",
        error=None,
        audit=({"kind": "leak", "message": "m", "step": 0},),
        extra={"k": [1, 2]},
        ended=123.0,
    )
    with EpisodeWriter(tmp_path, header) as writer:
        writer.step(step)
        writer.end(end)
    log = read_episode(writer.jsonl_path)
    assert log.skipped == []
    assert log.header is not None
    assert log.header.rules_visible == {"max_weight": 150}
    assert log.header.extra == {"grader": "tests"}
    assert log.header.initial_output == b""  # kept in the cast only
    assert log.steps[0] == StepRecord(**{**step.__dict__, "raw": b""})
    assert log.end == end
    first = json.loads(writer.jsonl_path.read_text().splitlines()[0])
    assert first["type"] == "header" and first["schema"] == SCHEMA_VERSION


def test_writer_satisfies_the_recorder_protocol() -> None:
    assert isinstance(NullRecorder(), Recorder)
    assert issubclass(EpisodeWriter, Recorder)


def test_an_existing_episode_is_never_overwritten(tmp_path: Path) -> None:
    write_episode(tmp_path, 1)
    with pytest.raises(RecordingError, match="expected a new episode id"):
        EpisodeWriter(tmp_path, make_header())


def test_episode_ids_that_are_not_plain_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="plain file name"):
        EpisodeWriter(tmp_path, make_header("../escape"))


def test_a_run_folder_that_cannot_be_written_is_a_recording_error(tmp_path: Path) -> None:
    """It raised the OS's FileNotFoundError or NotADirectoryError, which `termgym run` and
    the env's callers do not take for a recording failure."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RecordingError, match=r"expected a run folder that can be written at"):
        EpisodeWriter(blocker / "run", make_header())


def test_a_cast_already_there_leaves_no_half_made_episode_open(tmp_path: Path) -> None:
    (tmp_path / "episodes").mkdir()
    header = make_header()
    (tmp_path / "episodes" / f"{header.episode_id}.cast").write_text("")
    with pytest.raises(RecordingError, match=r"expected a new, writable .*\.cast"):
        EpisodeWriter(tmp_path, header)
    assert not (tmp_path / "episodes" / f"{header.episode_id}.jsonl").exists()


def test_steps_after_the_end_are_refused(tmp_path: Path) -> None:
    writer = EpisodeWriter(tmp_path, make_header())
    writer.end(EpisodeEnd(reward=0.0, terminated=True, truncated=False))
    with pytest.raises(RecordingError, match="found it ended"):
        writer.step(make_step(0))
    writer.close()
    writer.close()


def test_each_step_is_on_disk_as_soon_as_step_returns(tmp_path: Path) -> None:
    writer = EpisodeWriter(tmp_path, make_header())
    writer.step(make_step(0))
    writer.step(make_step(1))
    log = read_episode(writer.jsonl_path)  # a second reader while the writer is open
    assert [s.action for s in log.steps] == ["echo 0", "echo 1"]
    assert log.end is None and log.status == "open"
    writer.close()


def test_lazy_and_eager_reading_agree(tmp_path: Path) -> None:
    path = write_episode(tmp_path, 50)
    lazy, eager = read_episode(path, lazy=True), read_episode(path, lazy=False)
    assert list(lazy.steps) == list(eager.steps)
    assert lazy.steps[-1].index == 49 and lazy.steps[10:12] == eager.steps[10:12]


def test_a_run_reads_back_with_its_header_and_episodes_in_start_order(tmp_path: Path) -> None:
    run = RunWriter(tmp_path / "runs", header={"agent": "oracle"})
    for n, started in (("b", 200.0), ("a", 300.0), ("c", 100.0)):
        with run.episode(make_header(n, started=started)) as writer:
            writer.step(make_step(0))
    run.finish(episodes=3)
    log = read_run(run.run_dir)
    assert [e.episode_id for e in log.episodes] == ["c", "b", "a"]
    assert log.header is not None and log.header["agent"] == "oracle"
    assert log.header["episodes"] == 3 and "finished" in log.header
    assert log.run_id == run.run_id
    assert latest_run(tmp_path / "runs") == run.run_dir


def test_reading_a_missing_file_says_what_was_expected(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="expected a readable episode file"):
        read_episode(tmp_path / "nope.jsonl")
    with pytest.raises(RecordingError, match="expected a run folder"):
        read_run(tmp_path / "nope")
