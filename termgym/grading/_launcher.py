"""The nests' launcher (termgym/verifier/nest_launch.c), compiled once per host.

Every verifier's grading folder carries it where this host can build it: the programs the
tests start as the agent's user then enter their nests through a small static program
started by vfork, not through a fork of the tests' interpreter (docs/security.md, "The
nest"). Where no C compiler is found, the build fails, or TERMGYM_NEST_LAUNCHER=0, there
is none, and the Python entry does the same work.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess

from termgym.sandbox import cache_dir
from termgym.verifier import NEST_LAUNCH

LAUNCHER = "termgym_nest_launch"
"""The launcher's name in a grading folder (root's, 0700)."""
OFF = "TERMGYM_NEST_LAUNCHER"
"""Set to 0 to do without the launcher (the Python entry)."""
FLAGS = ("-static", "-Os", "-s", "-x", "c")
COMPILERS = ("musl-gcc", "cc", "gcc")
"""Tried in this order: musl's static programs are a tenth of glibc's (about 70 KB against
800), and every verifier unpacks its copy."""


def nest_launcher() -> bytes | None:
    """The launcher's program (a static executable), or None where there is none."""
    if os.environ.get(OFF, "1") == "0":
        return None
    return _built()


@functools.cache
def _built() -> bytes | None:
    """The launcher built by the first compiler found, once per host (termgym's cache, by
    the digest of its source, compiler and flags), or None where it cannot be built."""
    source = NEST_LAUNCH.read_bytes()
    compiler = next((found for name in COMPILERS if (found := shutil.which(name))), None)
    if compiler is None:
        return None
    digest = hashlib.sha256(
        source + " ".join((os.path.basename(compiler), *FLAGS)).encode()
    ).hexdigest()[:16]
    target = cache_dir() / "nest-launch" / f"{LAUNCHER}-{digest}"
    try:
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
            built = subprocess.run(
                [compiler, *FLAGS, "-o", str(partial), "-"], input=source,
                capture_output=True, timeout=120, check=False,
            )  # fmt: skip
            if built.returncode != 0:
                partial.unlink(missing_ok=True)
                return None
            partial.replace(target)
        return target.read_bytes()
    except (OSError, subprocess.TimeoutExpired):
        return None
