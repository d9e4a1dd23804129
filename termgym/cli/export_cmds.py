"""`termgym export atif RUN_DIR` and the ATIF side of `termgym import atif FILE... --out RUN`."""

from __future__ import annotations

from pathlib import Path

import click

from termgym._terminal_text import printable


@click.group("export")
def export() -> None:
    """Write recorded episodes in formats other tools read."""


@export.command("atif")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder of the trajectories (default: RUN_DIR/atif).",
)
def export_atif(run_dir: Path, out: Path | None) -> None:
    """Write every finished episode of RUN_DIR as an ATIF trajectory (Harbor's Agent
    Trajectory Interchange Format), <episode id>.json each, validated as it is written."""
    from termgym.errors import RecordingError
    from termgym.recording import export_run

    try:
        written = export_run(run_dir, out)
    except RecordingError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.BadParameter(
            f"expected a folder that can be written at {out or run_dir / 'atif'}: "
            f"{exc.strerror or exc}",
            param_hint="--out",
        ) from None
    for path in written:
        click.echo(f"wrote     {path}")
    click.echo(f"\n{len(written)} trajectories in {out or run_dir / 'atif'}")
    if not written:
        raise click.ClickException(
            f"expected a finished episode in {run_dir / 'episodes'} (<id>.jsonl with its end "
            "line), found none"
        )


def import_atif_files(sources: tuple[Path, ...], out: Path, task: str | None) -> None:
    """`termgym import atif`: each trajectory becomes an episode recording of the run `out`."""
    from termgym.errors import RecordingError
    from termgym.recording import import_atif

    try:
        written = import_atif(sources, out, task=task)
    except RecordingError as exc:
        raise click.ClickException(printable(str(exc))) from None
    for path in written:
        click.echo(f"imported  {printable(str(path))}")
    click.echo(
        f"\n{len(written)} episodes in {printable(str(out))}, unverified: what they claim (a "
        "reward, verdicts, a class) was graded by no verifier here, and no report counts it. "
        f"`termgym tui {printable(str(out))}` shows them, and "
        "`termgym run --agent replay --agent-opt episode=FILE --tasks TASK --variants VARIANT` "
        "runs one again (TASK and VARIANT the episode's own: the replay agent refuses the "
        "episodes of other tasks)"
    )
    if not written:
        raise SystemExit(1)
