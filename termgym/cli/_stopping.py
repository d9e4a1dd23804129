"""Every `termgym` command ends alike on Ctrl-C, SIGTERM and SIGHUP: its sandboxes removed, a
line that says so, and an exit status that says which (130, 143, 129).

`termgym.sandbox.stop_on_signals` turns the signals into `Stopped` in the main thread and
closes every sandbox at once; the group's `invoke` catches what unwinds, closes what is
left (the pools, the zygotes), and exits. A thread that is still busy (an agent waiting on
a model's answer) gets `EXIT_GRACE` seconds; then the process exits without it, so that no
stop hangs.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from typing import Any

import click

from termgym.env import close_all_pools
from termgym.sandbox import Stopped, stop_on_signals, stop_sandboxes

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
    closed = stop_sandboxes()
    close_all_pools()
    what = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    extra = f" ({closed} closed on the way out)" if closed else ""
    click.echo(
        f"termgym {command}: stopped by {what}; every sandbox it started is removed{extra}.",
        err=True,
    )
    _exit(128 + signum)


def _exit(code: int) -> None:
    """Exit with `code` once the other threads end, or after EXIT_GRACE seconds without
    them (their work is gone with their sandboxes)."""
    deadline = time.monotonic() + EXIT_GRACE
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
    if any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.current_thread()
    ):
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)
