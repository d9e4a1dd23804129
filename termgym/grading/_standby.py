"""The standby runner: the grading runner started with its verifier, before the work arrives.

Starting the runner's interpreter and its imports costs most of a short grading (about
50 ms of 75 on bwrap). A verifier whose backend `HoldsStandby` starts the runner when the
verifier itself starts (in the pool, ahead of the grading), from this bootstrap: it reads
the runner's source from stdin, compiles it, imports what grading needs, and waits. After
the work and the grading folder are imported, `go()` gives it the manifest's place and the
report key on its stdin; from there it is the runner of a cold exec. Why that is as sound as
the cold exec: docs/security.md, "The standby runner".
"""

from __future__ import annotations

import functools
import json

from termgym.grading._bundle import RUNNER, GradingFolder
from termgym.sandbox import AGENT_UID, StandbySpec

BOOT = (
    "import sys\n"
    "source = sys.stdin.buffer.read(int(sys.stdin.buffer.readline()))\n"
    "exec(compile(source, 'termgym_run.py', 'exec'), {'__name__': 'termgym_standby'})\n"
)
"""The standby's whole command line after the interpreter: no path, no key, no rule."""

ENV = (
    ("HOME", "/root"),
    ("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
    ("TERMGYM_AGENT_UID", str(AGENT_UID)),
)
"""The runner's environment, the same as a cold exec's less the report key."""


READY = b"TERMGYM-STANDBY-READY"
"""What the standby prints once it waits (termgym.grading._sandbox_runner.STANDBY_READY)."""


@functools.cache
def standby_spec(python: str) -> StandbySpec:
    """The standby of a verifier whose runner is `python` (the task's `grading.python`);
    made once per interpreter path, as every grading asks for it (and pools key on it)."""
    source = RUNNER.read_bytes()
    return StandbySpec(
        argv=(python, "-I", "-B", "-c", BOOT),
        env=ENV,
        first=b"%d\n" % len(source) + source,
        workdir="/",
        ready=READY,
    )


def go(folder: GradingFolder, key: str) -> bytes:
    """The line that starts the grading: the manifest (relative to "/") and the key."""
    manifest = folder.path.lstrip("/") + "/manifest.json"
    return (json.dumps({"manifest": manifest, "key": key}) + "\n").encode("ascii")
