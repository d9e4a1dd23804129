"""One session whose first test's program leaves processes behind: none is left when the
next test runs, though that test's program runs in the nest the first one's ran in."""

import os
import subprocess
import sys
import time

AGENT_UID = 60000
SEEN = {}


def _agents_alive():
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat("/proc/" + entry).st_uid != AGENT_UID:
                continue
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            alive.append(entry)
    return alive


def _start(mode, beat):
    done = subprocess.run(
        [sys.executable, "/app/linger.py", mode, str(beat)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[0]  # the program's pid namespace


def test_1_the_program_leaves_processes_behind(tmp_path, rules):
    beat = tmp_path / "beat"
    SEEN["nest"], SEEN["beat"] = _start("linger", beat), beat
    deadline = time.monotonic() + 10
    while not (beat.exists() and beat.stat().st_size > 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert beat.exists() and _agents_alive()  # it runs on after its program ended


def test_2_none_of_them_is_left_in_the_nest_kept_for_it(tmp_path, rules):
    assert _agents_alive() == []
    beat = SEEN["beat"]
    size = beat.stat().st_size
    time.sleep(0.3)
    assert beat.stat().st_size == size  # nothing writes any more
    assert _start("once", tmp_path / "beat") == SEEN["nest"]  # the same nest as test 1
