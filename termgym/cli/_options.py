"""Options several commands share: where tasks are found (`--path`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from termgym._task_paths import TASKS_PATH_ENV, check_folder
from termgym.errors import TaskNotFound

F = TypeVar("F", bound=Callable[..., Any])


def _checked(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    for path in value:
        try:
            check_folder(path)
        except TaskNotFound as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return value


def task_paths(command: F) -> F:
    """`--path DIR` (repeatable): a folder of tasks, or a task folder, searched first."""
    option = click.option(
        "--path",
        "paths",
        multiple=True,
        callback=_checked,
        help=(
            "A folder of tasks, or a task folder, searched before the others (repeatable; "
            f"also ${TASKS_PATH_ENV}, {os.pathsep}-separated)."
        ),
    )
    return option(command)
