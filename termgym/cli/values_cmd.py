"""`termgym verify-values`: re-derive a run's rule values from the evaluator's secret."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from termgym._terminal_text import shown
from termgym.cli._options import task_paths
from termgym.errors import TermgymError
from termgym.tasks import SECRET_ENV


@click.command("verify-values")
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option(
    "--secret",
    envvar=SECRET_ENV,
    show_envvar=True,
    default=None,
    help="The secret the run was evaluated with (checked against its recorded fingerprint).",
)
@click.option("--all", "show_all", is_flag=True, help="List every episode, not only problems.")
@task_paths
def verify_values_command(
    run_dir: Path, secret: str | None, show_all: bool, paths: tuple[str, ...]
) -> None:
    """Re-derive every episode's enforced rule values from its seed, split and (with the
    secret) rotation period, and compare them with the recording. Exits 1 on a mismatch or
    an episode recorded under another secret."""
    from termgym.run import verify_values

    try:
        checks = verify_values(run_dir, secret, paths)
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from exc
    console = Console()
    table = Table(title=shown(f"rule values of {run_dir.name}"))
    for name in ("episode", "status", "recorded", "derived", "note"):
        table.add_column(name)
    for c in checks:
        if show_all or c.status != "ok" or c.note:
            table.add_row(
                shown(c.episode_id),
                c.status,
                shown(str(dict(c.recorded))),
                shown(str(dict(c.derived))),
                shown(c.note),
            )
    if table.rows:
        console.print(table)
    counts = Counter(c.status for c in checks)
    click.echo(", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    if counts["mismatch"] or counts["other-secret"]:
        raise SystemExit(1)
    if counts["needs-secret"]:
        raise click.ClickException(
            f"{counts['needs-secret']} episodes were drawn with a secret: give it with "
            f"--secret or ${SECRET_ENV}"
        )
