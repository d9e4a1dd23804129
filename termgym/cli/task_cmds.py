"""`termgym tasks` (list and validate task folders) and `termgym check` (run them for real)."""

from __future__ import annotations

import sys
import time

import click

from termgym._terminal_text import printable
from termgym.cli._options import task_paths
from termgym.errors import TermgymError
from termgym.tasks import load_task, task_dirs, tasks_in


@click.command("tasks")
@task_paths
@click.option("--validate", is_flag=True, help="Only validate; exit 1 if any task is malformed.")
def tasks(paths: tuple[str, ...], validate: bool) -> None:
    """List the tasks found, validating each spec: the tasks under the --path folders when any
    is given (and only those), else every task found (bundled, registered and
    $TERMGYM_TASKS_PATH)."""
    failed = 0
    found = tasks_in(paths) if paths else task_dirs()
    width = max([22, *(len(t) + 1 for t in found)])
    for task_id, folder in found.items():
        try:
            task = load_task(folder)
        except TermgymError as exc:
            failed += 1
            click.echo(
                f"{printable(task_id):<{width}} INVALID  {printable(str(exc))}", err=validate
            )
            continue
        if validate:
            click.echo(f"ok  {printable(task.id, one_line=True)}")
            continue
        rules = ", ".join(f"{n}={r.value!r}" for n, r in task.rules.items())
        click.echo(
            f"{printable(task.id, one_line=True):<{width}} {printable(task.spec.category):<10} "
            f"{printable('/'.join(task.spec.variants)):<44} {printable(rules, one_line=True)}"
        )
    if failed:
        sys.exit(1)


def _mark(value: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "-"}[value]


@click.command("check")
@click.argument("task_ids", nargs=-1)
@click.option("--backend", default=None, help="Sandbox backend (default: docker if it answers).")
@task_paths
@click.option(
    "-j",
    "--jobs",
    default=3,
    type=click.IntRange(min=1),
    show_default=True,
    help="Task variants checked at once (one container each).",
)
def check(
    task_ids: tuple[str, ...], backend: str | None, paths: tuple[str, ...], jobs: int
) -> None:
    """Run each task's oracle on every variant (must pass; on impossible, must follow the task
    and fail) and its memorized solution on the contradicted (must be stale), withheld
    (reported) and impossible (must fail) variants, its cheater on impossible (must pass);
    replay the oracle's answer under another surface (must fail). Exit 1 on any failure.

    TASK_IDS: the tasks to check. Without them: every task found under the --path folders
    when any is given (and only those), else every task found (bundled, registered and
    $TERMGYM_TASKS_PATH)."""
    from termgym.check import CheckRow, check_tasks, tasks_to_check
    from termgym.sandbox import Backend

    try:
        chosen = tasks_to_check(task_ids, paths)
        # an unknown one failed every check alike, each on its own line
        backend = Backend.coerce(backend).name
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from None
    if not chosen:
        where = f" under {', '.join(paths)}" if paths else ""
        raise click.ClickException(
            f"no tasks found{where} (a foreign task that cannot run here is skipped with a "
            "warning saying why)"
        )
    header = (
        f"{'task':<20} {'variant':<13} {'solution':<10} {'expects':<9} {'own':<5} "
        f"{'orig':<5} {'class':<8} {'result':<7} secs"
    )
    click.echo(header)

    def show(row: CheckRow) -> None:
        result = {True: "ok", False: "FAIL", None: "info"}[row.ok]
        click.echo(
            f"{printable(row.task, one_line=True):<20} {printable(row.variant, one_line=True):<13} "
            f"{printable(row.solution, one_line=True):<10} {row.expected[:9]:<9} "
            f"{_mark(row.own):<5} {_mark(row.original):<5} {row.episode_class or '-':<8} "
            f"{result:<7} {row.seconds:.1f}"
            + (
                f"  {printable(row.why, one_line=True)}"
                if row.why and (row.ok is not True or row.explained)
                else ""
            )
        )

    start = time.perf_counter()
    rows = check_tasks(chosen, backend, jobs=jobs, on_row=show)
    failures = [r for r in rows if r.ok is False]
    click.echo(
        f"\n{len(chosen)} task(s), {len(rows)} check(s), {len(failures)} failure(s) "
        f"in {time.perf_counter() - start:.0f}s on {backend}"
    )
    for row in failures:
        click.echo(
            printable(f"FAIL {row.task} [{row.variant}] {row.solution}: {row.why}"), err=True
        )
    if failures:
        sys.exit(1)
