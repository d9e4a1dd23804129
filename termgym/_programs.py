"""Where the host's programs are on PATH, looked up once for each PATH a process has.

A sandbox start asks for bwrap and unshare each time (an RL loop starts tens a second); a
lookup walks every folder of PATH. A program found is not looked for again while PATH is
the same; one not found is looked for again at the next call (it may be installed since).
"""

from __future__ import annotations

import os
import shutil

_found: dict[tuple[str, str | None], str] = {}


def on_path(name: str) -> str | None:
    """`shutil.which(name)` on this process's PATH, remembered once found."""
    key = (name, os.environ.get("PATH"))
    found = _found.get(key)
    if found is not None and os.access(found, os.X_OK):
        return found
    found = shutil.which(name)
    if found is None:
        _found.pop(key, None)
    else:
        _found[key] = found
    return found
