"""Every signal back to its default disposition, none blocked, before a program is exec'd.

A child inherits ignored signals: started from a script in the background (SIGINT ignored)
or from Python (SIGPIPE ignored), an agent's programs would shrug off Ctrl-C, and
`yes | head -1` would print "Broken pipe" and exit 1 instead of 141. glibc keeps signals 32
and 33 for itself and refuses to change them through `sigaction`, yet an ignored disposition
of them is inherited all the same (CI runners hand one down), so those two are reset with the
raw system call (`reset_reserved`).

Sandbox processes get their signals reset by `termgym.sandbox._spawn` (which runs this file
as a helper only where coreutils' `env --default-signal` is missing). Standard library
only, so that `scripts/ensure-system.sh` can start the Docker daemon through
it (`python3 termgym/isolation/_signals.py dockerd ...`) before any environment is installed:
containers inherit the daemon's dispositions.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import signal
import sys

_RT_SIGACTION = {"x86_64": 13, "aarch64": 134}.get(platform.machine())
"""The rt_sigaction system call's number on this machine (None: not known, not reset)."""
_SYSCALL = ctypes.CDLL(None, use_errno=True).syscall
"""Looked up once, at import."""
RESERVED = tuple(sorted(frozenset(range(1, signal.NSIG)) - frozenset(signal.valid_signals())))
"""The signals glibc keeps for itself (32 and 33 on Linux)."""


def reset_reserved(number: int) -> None:
    """SIG_DFL for a signal glibc will not let `sigaction` touch (a zeroed kernel sigaction:
    handler SIG_DFL, no flags, no restorer, empty mask)."""
    if _RT_SIGACTION is None:
        return
    action = ctypes.create_string_buffer(32)
    _SYSCALL(ctypes.c_long(_RT_SIGACTION), ctypes.c_long(number), action, None, ctypes.c_size_t(8))


def default_signals() -> None:
    """Every catchable signal to SIG_DFL and an empty signal mask, in this process."""
    for number in range(1, signal.NSIG):
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        if number in RESERVED:
            reset_reserved(number)
            continue
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python3 _signals.py PROGRAM [ARG...]  (runs PROGRAM with default signals)")
    default_signals()
    os.execvp(sys.argv[1], sys.argv[1:])
