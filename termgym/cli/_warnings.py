"""How a warning reads on the command line: `Warning: <message>` on stderr, as click writes
`Error: <message>`; never Python's `path:line: UserWarning:` and the source line after it."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any, TextIO

import click

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
"""Colour codes some libraries put in their warnings (Gymnasium's logger)."""


def show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """`warnings.showwarning` for the CLI: the message alone, as termgym's messages read."""
    text = _ANSI.sub("", str(message)).strip().removeprefix("WARN: ")
    click.echo(f"Warning: {text}", err=True)


def speak_plainly() -> Callable[[], Any]:
    """Route warnings through `show_warning` until the returned function is called."""
    previous = warnings.showwarning
    warnings.showwarning = show_warning

    def restore() -> None:
        warnings.showwarning = previous

    return restore
