"""Every `termgym` command ends alike on Ctrl-C, SIGTERM and SIGHUP: its sandboxes removed, a
line that says so, and an exit status that says which (130, 143, 129).

`termgym.sandbox.stop_on_signals` turns the signals into `Stopped` in the main thread and
closes every sandbox at once; the group's `invoke` catches what unwinds, closes what is
left (the pools, the zygotes), and exits. A thread that is still busy (an agent waiting on
a model's answer) gets `EXIT_GRACE` seconds; then the process exits without it, so that no
stop hangs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

import click

from termgym.env import close_all_pools
from termgym.sandbox import Stopped, started_sandboxes, stop_on_signals, stop_sandboxes

EXIT_GRACE = 30.0
"""Seconds a stopped command waits for its other threads before it exits without them."""


class StoppableGroup(click.Group):
    """A click group whose commands stop on Ctrl-C, SIGTERM and SIGHUP as described above."""

    def invoke(self, ctx: click.Context) -> Any:
        stop_on_signals(interrupt=True)
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, Stopped) as exc:
            name = ctx.invoked_subcommand or "termgym"
            _stop(name, exc)


def _stop(command: str, exc: KeyboardInterrupt | Stopped) -> None:
    """Close what the command started, say so, and exit 128 + the signal."""
    signum = exc.signum if isinstance(exc, Stopped) else int(signal.SIGINT)
    stop_sandboxes()
    close_all_pools()
    what = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    removed = "; every sandbox it started is removed" if started_sandboxes() else ""
    with contextlib.suppress(OSError):  # a terminal that hung up takes no more output
        click.echo(f"termgym {command}: stopped by {what}{removed}.", err=True)
    _exit(128 + signum)


def _exit(code: int) -> None:
    """Exit with `code`: the interpreter's own exit (its threads joined, atexit run), watched
    by a thread that ends the process EXIT_GRACE seconds on if that hangs (a thread still
    busy: its work is gone with its sandboxes)."""

    def watch() -> None:
        time.sleep(EXIT_GRACE)
        logging.shutdown()
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)

    threading.Thread(target=watch, name="termgym-exit-watch", daemon=True).start()
    raise SystemExit(code)
