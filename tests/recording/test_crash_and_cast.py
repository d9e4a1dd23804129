"""A kill -9 of the writer leaves every finished step readable; asciinema accepts the cast."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from termgym.recording import CastReplay, index_cast, read_episode

from .conftest import write_episode

WRITER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from termgym.recording import EpisodeHeader, EpisodeWriter, StepRecord
    header = EpisodeHeader("killed", "fuel-planner", 1, "original", {"max_weight": 100},
                           {"max_weight": 100}, 1, "loop", "docker", {}, time.time())
    writer = EpisodeWriter(Path(sys.argv[1]), header)
    i = 0
    while True:
        out = ("output of step %d " % i) * 50 + "\\n"
        writer.step(StepRecord(i, "command", "cmd %d" % i, out, 0, 0.001, screen=out,
                               raw=out.encode(), t=i * 0.001))
        print(i, flush=True)
        i += 1
    """
)


def test_kill_9_mid_episode_leaves_every_finished_step_readable(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    finished = -1
    while finished < 300:
        finished = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)  # it keeps writing steps while the signal arrives
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    log = read_episode(tmp_path / "episodes" / "killed.jsonl")
    indices = [s.index for s in log.steps]
    assert len(indices) > finished
    assert indices == list(range(len(indices)))
    assert log.steps[finished].action == f"cmd {finished}"
    assert log.end is None and log.status == "open"
    assert len(log.skipped) <= 1  # at most the line being written when the signal hit
    cast = index_cast((tmp_path / "episodes" / "killed.cast").read_bytes())
    assert all(i in cast.markers for i in indices)  # every readable step has its screen


@pytest.fixture
def asciinema() -> str:
    # the dev extra installs it beside this interpreter, which need not be on PATH
    path = shutil.which("asciinema") or shutil.which(
        "asciinema", path=str(Path(sys.executable).parent)
    )
    if path is None or shutil.which("script") is None:
        pytest.skip("asciinema or script (util-linux) is not installed")
    return path


def _in_a_tty(command: str) -> str:
    # asciinema reads /dev/tty, so it runs under script(1), which gives it a pseudo-terminal.
    done = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode("utf-8", "replace")


def test_asciinema_cat_prints_the_recorded_terminal_stream(tmp_path: Path, asciinema: str) -> None:
    jsonl = write_episode(tmp_path, 4)
    out = _in_a_tty(f"{asciinema} cat {jsonl.with_suffix('.cast')}")
    assert out.startswith("$ echo 0")
    assert "line 3\r\n$ " in out


def test_asciinema_play_replays_the_cast(tmp_path: Path, asciinema: str) -> None:
    jsonl = write_episode(tmp_path, 3)
    out = _in_a_tty(f"{asciinema} play -s 100 {jsonl.with_suffix('.cast')}")
    assert "line 2" in out


def test_the_cast_replays_to_the_screen_after_any_step(tmp_path: Path) -> None:
    jsonl = write_episode(tmp_path, 30)
    replay = CastReplay(jsonl.with_suffix(".cast"))
    assert replay.steps == 30
    assert replay.screen_after(29).text().endswith("line 29\n$")
    assert (
        replay.screen_after(2).text() == "$ echo 0\nline 0\n$ echo 1\nline 1\n$ echo 2\nline 2\n$"
    )
    after_last = replay.screen_after(29).text().split("\n")
    assert len(after_last) == 40 and after_last[-2:] == ["line 29", "$"]
    assert replay.screen_after(2).text().startswith("$ echo 0")  # seeking back works again
