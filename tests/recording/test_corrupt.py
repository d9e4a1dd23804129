"""Truncated and corrupt recordings open with what is readable and say what was skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from termgym.recording import EpisodeFollower, read_episode

from .conftest import make_step, write_episode


@pytest.mark.parametrize("lazy", [True, False])
def test_a_cut_last_line_is_skipped_and_reported(tmp_path: Path, lazy: bool) -> None:
    path = write_episode(tmp_path, 5, end=False)
    data = path.read_bytes()
    path.write_bytes(data[:-20])  # cut inside the last step line
    log = read_episode(path, lazy=lazy)
    assert [s.index for s in log.steps] == [0, 1, 2, 3]
    assert len(log.skipped) == 1 and "incomplete last line" in log.skipped[0]


@pytest.mark.parametrize("lazy", [True, False])
def test_garbage_in_the_middle_is_skipped_and_the_rest_kept(tmp_path: Path, lazy: bool) -> None:
    path = write_episode(tmp_path, 6)
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3][:30]  # a step line cut short
    lines.insert(5, b"\x00\xff not json at all")
    path.write_bytes(b"\n".join(lines))
    log = read_episode(path, lazy=lazy)
    assert [s.index for s in log.steps] == [0, 1, 3, 4, 5]
    assert log.end is not None and log.end.episode_class == "adapted"
    assert len(log.skipped) == 2
    assert any("line 4" in note for note in log.skipped)
    assert any("line 6" in note for note in log.skipped)


def test_a_missing_header_is_reported_and_steps_still_read(tmp_path: Path) -> None:
    path = write_episode(tmp_path, 3)
    path.write_bytes(b"\n".join(path.read_bytes().split(b"\n")[1:]))
    log = read_episode(path)
    assert log.header is None and len(log.steps) == 3
    assert log.episode_id == "ep-1"
    assert "header line missing" in log.skipped[0]


def test_an_empty_file_opens_as_an_empty_episode(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    log = read_episode(path)
    assert len(log.steps) == 0 and log.end is None and log.header is None


def test_the_follower_holds_back_a_partial_line_until_it_is_complete(tmp_path: Path) -> None:
    path = write_episode(tmp_path, 3, end=False)
    data = path.read_bytes()
    lines = data.split(b"\n")
    path.write_bytes(b"\n".join(lines[:2]) + b"\n" + lines[2][:15])
    follower = EpisodeFollower(path)
    first = follower.poll()
    assert [s.index for s in first] == [0]
    assert follower.header is not None and follower.header.task == "fuel-planner"
    assert follower.poll() == []
    path.write_bytes(data)
    assert [s.index for s in follower.poll()] == [1, 2]
    assert not follower.finished and follower.skipped == []


def test_the_follower_sees_new_steps_and_the_end_as_they_are_written(tmp_path: Path) -> None:
    from termgym.recording import EpisodeEnd, EpisodeWriter

    from .conftest import make_header

    follower = EpisodeFollower(tmp_path / "episodes" / "live.jsonl")
    assert follower.poll() == []  # not created yet
    writer = EpisodeWriter(tmp_path, make_header("live"))
    writer.step(make_step(0))
    assert [s.index for s in follower.poll()] == [0]
    writer.step(make_step(1))
    writer.step(make_step(2))
    assert [s.index for s in follower.poll()] == [1, 2]
    writer.end(EpisodeEnd(reward=0.0, terminated=True, truncated=False, episode_class="stale"))
    assert follower.poll() == [] and follower.finished and follower.end.episode_class == "stale"
    writer.close()


def test_read_run_of_a_file_says_it_found_a_file(tmp_path) -> None:
    """It said 'found no such folder' of an episode file given in place of its run."""
    from termgym.errors import RecordingError
    from termgym.recording import read_run

    episode = tmp_path / "e.jsonl"
    episode.write_text("")
    with pytest.raises(RecordingError, match=r"expected a run folder at .*e\.jsonl; found a file"):
        read_run(episode)
    with pytest.raises(RecordingError, match=r"found no such folder"):
        read_run(tmp_path / "missing")
