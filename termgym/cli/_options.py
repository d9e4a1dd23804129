"""Options several commands share: where tasks are found (`--path`), which variants run."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from termgym._task_paths import TASKS_PATH_ENV, check_folder
from termgym._vocabulary import Variant, as_variant
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


def variant_list(text: str) -> tuple[Variant, ...]:
    """The variants a comma-separated `--variants` names, read once.

    Raises:
        click.BadParameter: a name is no variant (the message lists them).
    """
    try:
        variants = tuple(as_variant(v.strip()) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--variants") from None
    if not variants:
        raise click.BadParameter(
            f"expected at least one variant, comma-separated; found {text!r}",
            param_hint="--variants",
        )
    return variants
