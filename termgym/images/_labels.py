"""The labels on every container termgym starts, so `termgym gc` finds the ones whose starter
is gone (a sandbox, a verifier, an image export)."""

from __future__ import annotations

import os
import socket

SANDBOX_LABEL = "io.termgym.sandbox"
"""Docker label put on every container termgym starts, so `termgym gc` can find leftovers."""

OWNER_HOST_LABEL = "io.termgym.host"
OWNER_PID_LABEL = "io.termgym.pid"
ROLE_LABEL = "io.termgym.role"
"""Who started a container, and what for; `termgym gc` removes those whose starter is gone."""


def owner_labels(role: str) -> dict[str, str]:
    """The labels of a container this process starts for `role`: `termgym gc` finds it, and
    removes it once this process is gone."""
    return {
        SANDBOX_LABEL: "1",
        OWNER_HOST_LABEL: socket.gethostname(),
        OWNER_PID_LABEL: str(os.getpid()),
        ROLE_LABEL: role,
    }
