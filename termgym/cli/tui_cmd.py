"""`termgym tui`: open the Textual app on a run folder or an episode recording."""

from __future__ import annotations

from pathlib import Path

import click

from termgym.errors import RecordingError


@click.command("tui")
@click.argument("target", required=False, type=click.Path(path_type=Path))
@click.argument("other", required=False, type=click.Path(path_type=Path))
@click.option(
    "--runs",
    "runs_root",
    default="runs",
    show_default=True,
    type=click.Path(path_type=Path),
    help="Where runs live (for the default target).",
)
def tui(target: Path | None, other: Path | None, runs_root: Path) -> None:
    """Replay episodes step by step, watch runs live, compare two episodes.

    TARGET is a run folder (runs/<run-id>) or an episode file (episodes/<id>.jsonl or .cast);
    by default the latest run under ./runs. With a second episode file OTHER, the two are
    compared side by side. Press ? in the app for every key.
    """
    try:
        from termgym.tui.app import TermgymApp, resolve_target
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "textual":
            raise click.ClickException(
                "The TUI needs Textual, an optional dependency: "
                "pip install 'termgym[tui]' (make test and make demo install it)."
            ) from None
        raise

    try:
        path = resolve_target(target, runs_root)
        second = resolve_target(other, runs_root) if other is not None else None
        if second is not None and (path.is_dir() or second.is_dir()):
            raise RecordingError("expected two episode files to compare, found a folder")
    except RecordingError as exc:
        raise click.ClickException(str(exc)) from exc
    TermgymApp(path, second).run()
