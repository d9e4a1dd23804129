"""A verifier's only job run in the runner itself (`termgym_prepare.run_here`): whenever its
timer fires, the runner comes back as it was, never with the timer's interrupt escaping.

Run here, in a fresh interpreter with the module as the verifier has it, against jobs that
end within microseconds of their timeout: before the fix, the interrupt escaped from the
teardown in about one run in eight, leaving the job's output, folder and environment in
place of the runner's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from termgym.verifier import INJECTED

RACE = r"""
import importlib.util, os, random, sys, time
spec = importlib.util.spec_from_file_location("termgym_prepare", sys.argv[1])
prepare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prepare)
log = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
before = (os.getcwd(), dict(os.environ), os.readlink("/proc/self/fd/1"))


class Busy:
    def __init__(self, seconds):
        self.seconds = seconds

    def run(self):
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            pass
        return 0


timeout, escaped, ended, overran = 0.005, 0, 0, 0
for _ in range(600):
    try:
        job = {"handle": Busy(timeout + random.uniform(-30e-6, 30e-6))}
        _, timed_out = prepare.run_here(job, {"JOB": "1"}, "/", log, timeout)
        overran += timed_out
        ended += not timed_out
    except KeyboardInterrupt:
        escaped += 1
    if (os.getcwd(), dict(os.environ), os.readlink("/proc/self/fd/1")) != before:
        escaped += 1000
        break
print(escaped, ended, overran, file=sys.stderr)
"""


def test_a_timer_that_fires_as_the_job_ends_never_escapes_the_runner(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RACE, str(INJECTED["termgym_prepare.py"]), str(tmp_path / "log")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    escaped, ended, overran = (int(n) for n in done.stderr.split()[-3:])
    assert escaped == 0, done.stderr[-500:]
    assert ended and overran  # both ways out were taken: the race was run
