"""Containers whose removal failed for a moment are removed later, not left behind.

A container's removal fails when the engine is restarting or down for a moment (connection
refused), or too busy to answer within the deadline. Such a container is handed to a thread
of this process that asks again every few seconds (`RETRY`, for `GIVE_UP` seconds), and once
more, briefly, as the process exits (after its pools closed: what their closes could not
remove is tried too). At its exit a process that started containers also removes any still
labelled as its own: one whose creation the engine finished as it restarted, after the
removal by name had found nothing. Only what is still there then is left to `termgym gc`.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import multiprocessing.util
import os
import socket
import threading
import time

from termgym.images import (
    OWNER_HOST_LABEL,
    OWNER_PID_LABEL,
    docker_client,
    engine_address,
    forget_clients,
)
from termgym.sandbox._deadline import within

log = logging.getLogger(__name__)

RETRY = (2.0, 5.0, 10.0)
"""Seconds between tries: the first waits, then the next ones, the last repeated."""
GIVE_UP = 600.0
"""Seconds after which a container that cannot be removed is left to `termgym gc`."""
AT_EXIT = 10.0
"""Seconds the process's exit spends on what is still pending, and as much on its sweep."""

_lock = threading.Lock()
_pending: dict[str, float] = {}
_thread_pid: int | None = None
_engine_pid: int | None = None


def remove_later(target: str) -> None:
    """Ask again, in the background, to remove the container `target` (id or name)."""
    global _thread_pid
    with _lock:
        _pending.setdefault(target, time.monotonic())
        if _thread_pid == os.getpid():
            return
        _thread_pid = os.getpid()
    used_engine()
    threading.Thread(target=_retry, name="termgym-removals", daemon=True).start()


def used_engine() -> None:
    """Say that this process starts containers: its exit removes those still there."""
    global _engine_pid
    if _engine_pid == os.getpid():
        return
    _engine_pid = os.getpid()
    # a vector env's worker leaves through os._exit: its finalizers run, atexit does not
    multiprocessing.util.Finalize(None, _at_exit, exitpriority=0)


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
    """One try (two where the first met a connection the engine's restart closed); True
    when the container is gone."""
    import docker.errors
    import requests

    for _ in range(2):
        try:
            remove = functools.partial(docker_client().api.remove_container, target, force=True)
            within(seconds, "removing a container", remove)
        except docker.errors.NotFound:
            break
        except requests.exceptions.ConnectionError:
            forget_clients()  # its pooled connections died with the engine: a fresh client
            continue
        except Exception:  # noqa: BLE001 - the engine still away: the next try
            return False
        break
    else:
        return False
    with _lock:
        _pending.pop(target, None)
    return True


def remove_pending(seconds: float = AT_EXIT) -> list[str]:
    """Try, now and without a thread (it runs as the process exits), to remove what is
    pending, within about `seconds` in all; what is still pending after."""
    import docker

    if not pending():
        return []
    deadline = time.monotonic() + seconds
    with contextlib.suppress(Exception):
        api = docker.APIClient(base_url=engine_address(), timeout=max(1, int(seconds)))
        for target in pending():
            if time.monotonic() > deadline:
                break
            try:
                api.remove_container(target, force=True)
            except docker.errors.NotFound:
                pass
            except Exception:  # noqa: BLE001 - the engine still away: left to `termgym gc`
                continue
            with _lock:
                _pending.pop(target, None)
        api.close()
    return pending()


def _sweep(seconds: float) -> None:
    """Remove every container labelled as this process's (only this process made those: no
    other process of the host has its pid); run at its exit, when none is in use. An engine
    that does not answer (restarting) is asked again for `seconds`."""
    import docker

    labels = [f"{OWNER_PID_LABEL}={os.getpid()}", f"{OWNER_HOST_LABEL}={socket.gethostname()}"]
    deadline = time.monotonic() + seconds
    while True:
        try:
            api = docker.APIClient(base_url=engine_address(), timeout=max(1, int(seconds)))
            try:
                for found in api.containers(all=True, filters={"label": labels}, quiet=True):
                    with contextlib.suppress(Exception):
                        api.remove_container(found["Id"], force=True)
                return
            finally:
                api.close()
        except Exception:  # noqa: BLE001 - the engine away: again, while there is time
            if time.monotonic() > deadline:
                return
            time.sleep(0.5)


def _at_exit() -> None:
    if _thread_pid == os.getpid():
        remove_pending()
    if _engine_pid == os.getpid():
        _sweep(AT_EXIT)


atexit.register(_at_exit)  # at import: it runs after the exit hooks registered later (pools)
