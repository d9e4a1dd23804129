"""The nests' launcher (termgym/verifier/nest_launch.c), compiled once per host.

Every verifier's grading folder carries it where this host can build it: the programs the
tests start as the agent's user then enter their nests through a small static program
started by vfork, not through a fork of the tests' interpreter (docs/security.md, "The
nest"). Where no C compiler is found, the build fails, or TERMGYM_NEST_LAUNCHER=0, there
is none, and the Python entry does the same work.
"""

from __future__ import annotations

import functools
import os

from termgym.sandbox import static_program
from termgym.verifier import NEST_LAUNCH

LAUNCHER = "termgym_nest_launch"
"""The launcher's name in a grading folder (root's, 0700)."""
OFF = "TERMGYM_NEST_LAUNCHER"
"""Set to 0 to do without the launcher (the Python entry)."""


def nest_launcher() -> bytes | None:
    """The launcher's program (a static executable), or None where there is none."""
    if os.environ.get(OFF, "1") == "0":
        return None
    return _built()


@functools.cache
def _built() -> bytes | None:
    """The launcher as this host builds it (`termgym.sandbox.static_program`), read once."""
    program = static_program(NEST_LAUNCH, LAUNCHER)
    try:
        return program.read_bytes() if program is not None else None
    except OSError:
        return None
