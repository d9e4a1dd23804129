"""Containers whose removal failed for a moment are removed later, not left behind.

A container's removal fails when the engine is restarting or down for a moment (connection
refused), or too busy to answer within the deadline. Such a container is handed to a thread
of this process that asks again every few seconds (`RETRY`, for `GIVE_UP` seconds), and once
more, briefly, as the process exits; only what is still there then is left to `termgym gc`.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time

from termgym.sandbox._deadline import within
from termgym.sandbox._engine import docker_client

log = logging.getLogger(__name__)

RETRY = (2.0, 5.0, 10.0)
"""Seconds between tries: the first waits, then the next ones, the last repeated."""
GIVE_UP = 600.0
"""Seconds after which a container that cannot be removed is left to `termgym gc`."""
AT_EXIT = 10.0
"""Seconds the process's exit spends on what is still pending."""

_lock = threading.Lock()
_pending: dict[str, float] = {}
_thread_pid: int | None = None


def remove_later(target: str) -> None:
    """Ask again, in the background, to remove the container `target` (id or name)."""
    global _thread_pid
    with _lock:
        _pending.setdefault(target, time.monotonic())
        if _thread_pid == os.getpid():
            return
        _thread_pid = os.getpid()
    atexit.register(_at_exit)
    threading.Thread(target=_retry, name="termgym-removals", daemon=True).start()


def pending() -> list[str]:
    """The containers still to be removed."""
    with _lock:
        return list(_pending)


def _retry() -> None:
    attempt = 0
    while True:
        time.sleep(RETRY[min(attempt, len(RETRY) - 1)])
        attempt += 1
        for target in pending():
            if _remove(target, 30.0):
                continue
            with _lock:
                if time.monotonic() - _pending.get(target, time.monotonic()) > GIVE_UP:
                    _pending.pop(target, None)
                    log.warning("could not remove %s in %g s: `termgym gc` will", target, GIVE_UP)


def _remove(target: str, seconds: float) -> bool:
    """One try; True when the container is gone."""
    import docker.errors

    try:
        api = docker_client().api
        within(seconds, "removing a container", lambda: api.remove_container(target, force=True))
    except docker.errors.NotFound:
        pass
    except Exception:  # noqa: BLE001 - the engine still away: the next try
        return False
    with _lock:
        _pending.pop(target, None)
    return True


def _at_exit() -> None:
    deadline = time.monotonic() + AT_EXIT
    for target in pending():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        with contextlib.suppress(Exception):
            _remove(target, left)
