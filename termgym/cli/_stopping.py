"""Every `termgym` command ends alike on Ctrl-C, SIGTERM and SIGHUP: its sandboxes removed, a
line that says so, and an exit status that says which (130, 143, 129).

`termgym._stopping.stop_on_signals` turns the signals into `Stopped` in the main thread and
closes every sandbox at once (pools', episodes', gradings', zygotes'); the group's `invoke`
catches what unwinds, waits for those closes, and exits. A thread that is still busy (an
agent waiting on a model's answer) gets `EXIT_GRACE` seconds; then the process exits
without it, so that no stop hangs. Only the light `termgym._stopping` is imported here: the
command line imports a command's modules when it runs.
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

from termgym._stopping import Stopped, started_sandboxes, stop_on_signals, stop_sandboxes

EXIT_GRACE = 10.0
"""Seconds a stopped command waits for its other threads before it exits without them."""


class StoppableGroup(click.Group):
    """A click group whose commands stop on Ctrl-C, SIGTERM and SIGHUP as described above,
    from the reading of the command line on (click would end a Ctrl-C there with its own
    "Aborted!" and exit 1)."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        stop_on_signals(interrupt=True)
        try:
            return super().make_context(info_name, args, parent, **extra)
        except (KeyboardInterrupt, Stopped) as exc:
            _stop(_command(args), exc)
            raise  # not reached: _stop exits

    def invoke(self, ctx: click.Context) -> Any:
        stop_on_signals(interrupt=True)
        # the command's name, then its arguments: click keeps the name apart (`protected`)
        named = getattr(ctx, "_protected_args", None)  # click 8.2 on; before, the public one
        words = [*(named if named is not None else ctx.protected_args), *ctx.args]
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, Stopped) as exc:
            _stop(ctx.invoked_subcommand or _command(words), exc)


def _command(words: list[str]) -> str:
    """The command's name among the command line's words (its first that is no option)."""
    return next((word for word in words if not word.startswith("-")), "")


def _stop(command: str, exc: KeyboardInterrupt | Stopped) -> None:
    """Close what the command started, say so, and exit 128 + the signal."""
    signum = exc.signum if isinstance(exc, Stopped) else int(signal.SIGINT)
    stop_sandboxes()
    what = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    removed = "; every sandbox it started is removed" if started_sandboxes() else ""
    name = f"termgym {command}" if command else "termgym"
    with contextlib.suppress(OSError):  # a terminal that hung up takes no more output
        click.echo(f"{name}: stopped by {what}{removed}.", err=True)
    _exit(128 + signum)


def _exit(code: int) -> None:
    """Exit with `code`: the interpreter's own exit (its threads joined, atexit run), watched
    by a thread that ends the process EXIT_GRACE seconds on if that exit still waits (on a
    thread still busy: its work is gone with its sandboxes). Where the SystemExit is caught
    (click's test runner, a program that calls the command line), nothing is ended."""
    exiting = threading.Event()
    # Called as the interpreter's exit begins, before it joins the threads (an executor's
    # workers among them): the one moment that says the SystemExit was not caught. CPython's
    # hook for that, which concurrent.futures uses; without it nothing is watched.
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        with contextlib.suppress(RuntimeError):  # the exit began already
            register(exiting.set)

    def watch() -> None:
        if not exiting.wait(EXIT_GRACE):
            return  # the exit never began: the SystemExit was caught, the caller goes on
        time.sleep(EXIT_GRACE)
        logging.shutdown()  # the exit still waits on a busy thread: end it here
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)

    threading.Thread(target=watch, name="termgym-exit-watch", daemon=True).start()
    raise SystemExit(code)
