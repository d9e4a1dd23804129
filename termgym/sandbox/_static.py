"""termgym's small static programs, compiled on the host where they run, once per host.

Two C programs stand in for work that would otherwise cost a process start each, or a fork
of an interpreter: the sandboxes' spawn helper (`spawn_launch.c`, this package's:
`termgym.sandbox._spawn`) and the nests' launcher (termgym/verifier/nest_launch.c, copied
into every verifier's grading folder: `termgym.grading`). Each is built by the first
compiler found into termgym's cache, named by the digest of its source, compiler and
flags, so a changed source builds anew and every process of the host shares the build.
Where no compiler is found or the build fails there is none, and the work is done the
slower way.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from termgym.images import cache_dir

FLAGS = ("-static", "-Os", "-s", "-x", "c")
COMPILERS = ("musl-gcc", "cc", "gcc")
"""Tried in this order: musl's static programs are a tenth of glibc's (about 70 KB against
800), and every verifier unpacks its copy of the nests' launcher."""


@functools.cache
def static_program(source: Path, name: str) -> Path | None:
    """The program `source` (C) built static, as `name` in termgym's cache (once per host and
    source), or None where it cannot be built here."""
    text = source.read_bytes()
    compiler = next((found for each in COMPILERS if (found := shutil.which(each))), None)
    if compiler is None:
        return None
    digest = hashlib.sha256(
        text + " ".join((os.path.basename(compiler), *FLAGS)).encode()
    ).hexdigest()[:16]
    target = cache_dir() / "programs" / f"{name}-{digest}"
    try:
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
            built = subprocess.run(
                [compiler, *FLAGS, "-o", str(partial), "-"], input=text,
                capture_output=True, timeout=120, check=False,
            )  # fmt: skip
            if built.returncode != 0:
                partial.unlink(missing_ok=True)
                return None
            partial.replace(target)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return target
