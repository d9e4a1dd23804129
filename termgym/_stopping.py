"""How a termgym process stops: SIGTERM and SIGHUP end it as Ctrl-C does, and every sandbox it
started is closed, whoever held it.

A process manager, `timeout`, a CI runner or a closed terminal ends a process with SIGTERM or
SIGHUP, whose default is to die at once: every container and verifier the process had
started stayed up. `stop_on_signals` turns them, in the main thread, into `Stopped` (a
SystemExit whose code is 128 + the signal, as the shell reports a death by that signal), so
the process unwinds as it does on Ctrl-C. A second signal while it cleans up is ignored:
the clean-up is never cut short (SIGKILL still is).

Every sandbox of the bundled backends is `track`ed from the first moment of its start to
its close. `stop_sandboxes` closes all of them at once, the ones a pool keeps, an episode
holds, a grading or `termgym check` uses, or a start has under way, and, until `resume`,
refuses new starts (`SandboxStartError`, an infrastructure error): a worker thread still
in an episode fails at its next start instead of making more. An episode graded while the
process stops is an infrastructure error, never a verdict (`stopping`). At the process's
exit, normal or by `Stopped`, what is still tracked is closed (atexit, and multiprocessing's
finalizers for a vector env's worker, which leaves through os._exit).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import multiprocessing.util
import os
import signal
import threading
import time
from collections.abc import Iterable
from typing import Any, Protocol

from termgym.errors import SandboxStartError

log = logging.getLogger(__name__)

SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP)
"""The signals that end a termgym process as Ctrl-C does."""

CLOSE_TIMEOUT = 120.0
"""Seconds `stop_sandboxes` waits for the closes it runs side by side (each engine call has
its own deadline; a machine under load can make a removal take tens of seconds)."""


class Stopped(SystemExit):
    """SIGTERM or SIGHUP arrived: the main thread unwinds, the process exits 128 + signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum

    @property
    def name(self) -> str:
        """The signal's name, e.g. "SIGTERM"."""
        return signal.Signals(self.signum).name


class _Closable(Protocol):
    def close(self) -> None: ...


_lock = threading.Lock()
_live: dict[int, _Closable] = {}
_closing: set[int] = set()
_stopping = threading.Event()
_hooked_pid: int | None = None
_signals_pid: int | None = None
_stopped_by: int | None = None
_started = [0]


def track(sandbox: _Closable) -> None:
    """Called first in a sandbox's start: it is closed by `stop_sandboxes` and at exit.

    Raises:
        SandboxStartError: the process is stopping; nothing was started.
    """
    _hook_exit()
    with _lock:
        if _stopping.is_set():
            raise SandboxStartError(
                "termgym is stopping (a signal or Ctrl-C): no sandbox starts any more"
            )
        _live[id(sandbox)] = sandbox
        _started[0] += 1


def untrack(sandbox: _Closable) -> None:
    """Called by a sandbox's close when it is done (in a `finally`: a close that failed
    halfway is done too)."""
    with _lock:
        _live.pop(id(sandbox), None)


def started_sandboxes() -> int:
    """How many sandboxes this process has started (or begun to start) in all."""
    return _started[0]


def live_sandboxes() -> int:
    """How many sandboxes this process has started and not closed."""
    with _lock:
        return len(_live)


def stopping() -> bool:
    """True from `stop_sandboxes` until `resume`: what ends now was cut short by the stop."""
    return _stopping.is_set()


def stop_sandboxes(timeout: float = CLOSE_TIMEOUT) -> int:
    """Refuse new starts and close every tracked sandbox, side by side; how many were closed.

    Waits at most `timeout` seconds for the closes (each keeps going in its daemon thread)."""
    _stopping.set()
    return _close_all(timeout)


def resume() -> None:
    """Let sandboxes start again (a process that goes on after a stop: a notebook whose
    cell was interrupted, a test)."""
    _stopping.clear()


def _close_all(timeout: float) -> int:
    """Close every tracked sandbox side by side, and wait (at most `timeout` seconds) until
    none is left: those whose close another thread has under way too (a close returns at
    once while another runs it, and the process must not exit under it)."""
    with _lock:
        found = [s for key, s in _live.items() if key not in _closing]
        _closing.update(id(s) for s in found)
    for sandbox in found:
        threading.Thread(
            target=_close_quietly, args=(sandbox,), name="termgym-stop", daemon=True
        ).start()
    deadline = time.monotonic() + timeout
    while live_sandboxes() and time.monotonic() < deadline:
        time.sleep(0.02)
    return len(found)


def _close_quietly(sandbox: _Closable) -> None:
    """Close `sandbox` (its close untracks it when done; one that returns at once while
    another thread closes it leaves it tracked until that close is done)."""
    try:
        sandbox.close()
    except Exception as exc:  # noqa: BLE001 - `termgym gc` removes what is left
        log.warning("could not close a sandbox while stopping: %s", exc)
        untrack(sandbox)
    finally:
        with _lock:
            _closing.discard(id(sandbox))


def _hook_exit() -> None:
    """Close what is tracked when this process ends, once per process (a forked child
    registers its own: registrations made before a fork do not carry into it)."""
    global _hooked_pid
    if _hooked_pid == os.getpid():
        return
    with _lock:
        if _hooked_pid == os.getpid():
            return
        _hooked_pid = os.getpid()
        if _stopped_by is None:  # a child forked while its parent stopped starts afresh
            _stopping.clear()
        _live.clear()  # a forked child closes only what it starts itself
    atexit.register(_at_exit)
    multiprocessing.util.Finalize(None, _at_exit, exitpriority=90)


def _at_exit() -> None:
    if live_sandboxes():
        stop_sandboxes()


def stop_on_signals(
    signals: Iterable[signal.Signals] = SIGNALS, *, interrupt: bool = False
) -> None:
    """From now on, `signals` raise `Stopped` in the main thread (once per process; only
    where the signal's disposition is the default: a handler of the caller's own is kept,
    and a SIGHUP ignored by `nohup` stays ignored). A no-op outside the main thread.

    The sandboxes are closed at once, by a thread of this module that the handler wakes,
    while the main thread unwinds: a main thread that waits for worker threads (an
    executor's shutdown) waits for threads whose sandboxes are gone and which start no
    more. `interrupt` does the same for Ctrl-C (SIGINT, still KeyboardInterrupt): for a
    command line, whose process ends with it; a library leaves SIGINT alone."""
    global _signals_pid
    if _signals_pid == os.getpid() or threading.current_thread() is not threading.main_thread():
        return
    _signals_pid = os.getpid()
    _start_stopper()
    for number in signals:
        with contextlib.suppress(OSError, ValueError):
            if signal.getsignal(number) is signal.SIG_DFL:
                signal.signal(number, _raise_stopped)
    if interrupt:
        with contextlib.suppress(OSError, ValueError):
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                signal.signal(signal.SIGINT, _raise_interrupt)


_stopper: tuple[int, int] | None = None
"""(pid, write end of the pipe) of this process's stopper thread."""


def _start_stopper() -> None:
    global _stopper
    read, write = os.pipe()
    os.set_inheritable(read, False)
    os.set_inheritable(write, False)

    def wait() -> None:
        while os.read(read, 1):
            stop_sandboxes()

    threading.Thread(target=wait, name="termgym-stopper", daemon=True).start()
    _stopper = (os.getpid(), write)


def _wake_stopper() -> None:
    """Ask the stopper to close every sandbox (a write to a pipe: safe in a handler)."""
    if _stopper is not None and _stopper[0] == os.getpid():
        with contextlib.suppress(OSError):
            os.write(_stopper[1], b"s")


def _raise_stopped(signum: int, frame: Any) -> None:
    global _stopped_by
    if _stopped_by is not None:
        return  # stopping already: the clean-up goes on
    _stopped_by = signum
    _wake_stopper()
    raise Stopped(signum)


def _raise_interrupt(signum: int, frame: Any) -> None:
    _wake_stopper()
    raise KeyboardInterrupt


def stopped_by() -> int | None:
    """The signal that stopped this process (None: none did)."""
    return _stopped_by
