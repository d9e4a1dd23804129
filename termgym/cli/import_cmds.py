"""`termgym import tb|harbor|atif SOURCE... --out DIR` and `termgym overlay suggest TASK`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from termgym._terminal_text import printable

if TYPE_CHECKING:
    from termgym.importing import ImportReport

OVERLAYS_OPTION = click.option(
    "--overlays",
    default=None,
    metavar="DIR|NAME",
    help="Overlays kept apart from the tasks: a folder of <task folder name>.yaml, used in "
    "place of an overlay.yaml beside the task, or a bundled collection (tb2: Terminal-Bench "
    "2.0, docs/tb2.md).",
)


@click.command("import")
@click.argument("fmt", metavar="tb|harbor|atif", type=click.Choice(["tb", "harbor", "atif"]))
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path),
    help="Folder of tasks (tb, harbor); the run folder of the episodes (atif).",
)
@click.option(
    "--task",
    default=None,
    help="atif: the task id of trajectories another tool wrote (termgym's name their own).",
)
@click.option(
    "--registry",
    is_flag=True,
    help="An image registry answers: build on each task's own base image (and pull "
    "prebuilt images) instead of the local stand-ins.",
)
@click.option(
    "--ca-bundle",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A CA bundle builds must trust (TLS interception); also $TERMGYM_CA_BUNDLE. The "
    "host's bundle is always added.",
)
@OVERLAYS_OPTION
@click.option(
    "--overlaid-only",
    is_flag=True,
    help="Import only the tasks that get an overlay (from --overlays or beside the task).",
)
def import_command(
    fmt: str,
    sources: tuple[str, ...],
    out: Path,
    registry: bool,
    ca_bundle: Path | None,
    overlays: str | None,
    overlaid_only: bool,
    task: str | None,
) -> None:
    """Convert Terminal-Bench or Harbor task folders (or folders of them, or a git source
    git+URL@COMMIT[#subdirectory=DIR], cloned and checked by hash) into termgym tasks; with
    atif, ATIF trajectory files (or folders of them) into episodes of a run folder.

    Exit 1 when none could be converted; every refused task is listed with the reason."""
    if fmt == "atif":
        from termgym.cli.export_cmds import import_atif_files

        import_atif_files(tuple(Path(s) for s in sources), out, task)
        return
    from termgym.errors import TaskError
    from termgym.importing import FORMATS, import_tasks

    start = time.perf_counter()
    try:
        report = import_tasks(
            list(sources), out, FORMATS[fmt], registry=registry, ca=ca_bundle,
            overlays=overlays, overlaid_only=overlaid_only,
        )  # fmt: skip
    except TaskError as exc:
        raise click.ClickException(str(exc)) from None
    seconds = time.perf_counter() - start
    print_report(report)
    count = len(report.converted)
    click.echo(f"\n{count} imported{summary_tail(report)} into {out} in {seconds * 1000:.0f} ms")
    if not count:
        sys.exit(1)


def print_report(report: ImportReport) -> None:
    """One line per imported task (its protection, overlay, base mapping, missing files),
    per refused one (why) and per overlay that named no task."""
    for done in report.converted:
        flags = [done.protection]
        if done.approximate:
            flags.append("approximate")
        if done.overlay:
            flags.append(f"overlay: {done.overlay}")
        if done.missing:
            flags.append(f"{len(done.missing)} missing")
        click.echo(printable(f"imported  {done.task_id:<40} {', '.join(flags)}", one_line=True))
        for mapping in done.mappings:
            click.echo(f"          base: {printable(mapping, one_line=True)}")
        for missing in done.missing:
            click.echo(f"          missing: {printable(missing, one_line=True)}")
    for folder, why in report.refused:
        click.echo(f"refused   {printable(folder.name):<40} {printable(why, one_line=True)}")
    for folder in report.skipped:
        click.echo(f"left out  {printable(folder.name):<40} no overlay (--overlaid-only)")
    for folder, why in report.passed_over:
        click.echo(f"no task   {printable(folder.name):<40} {printable(why, one_line=True)}")
    for path in report.unused_overlays:
        click.echo(
            f"unused    {printable(path.name):<40} no task folder of that name among the sources"
        )


def summary_tail(report: ImportReport) -> str:
    """ ", 2 refused, 1 left out without an overlay, 1 folder no task": what was not imported."""
    parts = [f"{len(report.refused)} refused"]
    if report.skipped:
        parts.append(f"{len(report.skipped)} without an overlay left out")
    if report.passed_over:
        parts.append(f"{len(report.passed_over)} folder(s) holding no task passed over")
    return ", " + ", ".join(parts)


@click.group("overlay")
def overlay() -> None:
    """Rule overlays: perturb a task's rules without rewriting it."""


@overlay.command("suggest")
@click.argument("task", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--limit", default=8, show_default=True, help="At most this many candidates.")
def suggest(task: Path, limit: int) -> None:
    """Propose candidate rules: whole numbers, dates, paths and quoted names that occur in what
    the agent sees and that the tests check, boilerplate left out, best first, each with a
    pattern on word boundaries unique in its file (a draft overlay.yaml)."""
    from termgym.importing import as_overlay_yaml, suggest_overlay

    found = suggest_overlay(task, limit=limit)
    if not found:
        click.echo("# no value occurs both in what the agent sees and in the tests", err=True)
        sys.exit(1)
    click.echo(as_overlay_yaml(found), nl=False)
