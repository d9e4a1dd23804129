"""`termgym report` and `termgym compare`: a run's report, and the regression gate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

from termgym._terminal_text import printable, shown
from termgym._vocabulary import BOOTSTRAP
from termgym.errors import TermgymError

if TYPE_CHECKING:
    from termgym.analysis.metrics import Estimate
    from termgym.report import RunData


def _load(path: Path, resamples: int, seed: int) -> RunData:
    from termgym.report import load_run

    try:
        return load_run(path, resamples=resamples, seed=seed)
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from exc


def _fraction(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    from termgym.report import parse_fraction

    if value is None:
        return None
    try:
        return parse_fraction(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


_resamples = click.option(
    "--resamples",
    default=BOOTSTRAP.resamples,
    show_default=True,
    type=click.IntRange(0),
    help="Bootstrap resamples for the intervals (the default is termgym tui's too).",
)
_seed = click.option(
    "--seed", default=BOOTSTRAP.seed, show_default=True, type=int, help="Seed of the bootstrap."
)


@click.command("report")
@click.argument("run_dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path),
    help="Where to write the HTML report [default: <first RUN_DIR>/report.html].",
)
@click.option("--no-html", is_flag=True, help="Print the tables only.")
@click.option(
    "--prometheus",
    "prom_path",
    type=click.Path(path_type=Path),
    help="Also write the metrics in Prometheus text format to this file.",
)
@_resamples
@_seed
def report(
    run_dirs: tuple[Path, ...],
    html_path: Path | None,
    no_html: bool,
    prom_path: Path | None,
    resamples: int,
    seed: int,
) -> None:
    """Print the metrics and trace audit of one or more runs (pooled, per agent), and write a
    self-contained HTML report.

    RUN_DIRS defaults to the latest run under ./runs.
    """
    from termgym.recording import latest_run
    from termgym.report import merge_runs, print_report, write_html, write_prometheus

    if not run_dirs:
        latest = latest_run("runs")
        if latest is None:
            raise click.UsageError("no RUN_DIR given and no run found under ./runs")
        run_dirs = (latest,)
    runs = [_load(path, resamples, seed) for path in run_dirs]
    run = merge_runs(runs, resamples=resamples, seed=seed)
    console = Console()
    print_report(run, console)
    if not no_html:
        target = html_path or Path(run_dirs[0]) / "report.html"
        path = _writing("--html", target, lambda: write_html(run, target))
        console.print(f"HTML report: {shown(str(path))}")
    if prom_path is not None:
        written = _writing("--prometheus", prom_path, lambda: write_prometheus(runs, prom_path))
        console.print(f"Prometheus metrics: {shown(str(written))}")


def _writing(option: str, path: Path, write: Callable[[], Path]) -> Path:
    """`write()`'s file; a file that cannot be written is the option's error (exit 2), with
    the reason, not a traceback (nor, in compare, an exit 1 read as a regression)."""
    try:
        return write()
    except OSError as exc:
        raise click.BadParameter(
            f"expected a file that can be written at {path}: {exc.strerror or exc}",
            param_hint=option,
        ) from None


@click.command("compare")
@click.argument("base", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("candidate", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option(
    "--max-drop",
    required=True,
    callback=_fraction,
    help="Largest tolerated fall of a rate that is better higher: a pass rate, the adaptation "
    "and conflict-report rates (0.05 or 5%).",
)
@click.option(
    "--max-rise",
    callback=_fraction,
    help="Largest tolerated rise of a rate that is better lower: the memorization index, the "
    "stale-rule, cheating, false-report and tamper rates [default: --max-drop].",
)
@click.option(
    "--prometheus",
    "prom_path",
    type=click.Path(path_type=Path),
    help="Also write both runs' metrics in Prometheus text format to this file.",
)
@click.option(
    "--decision",
    type=click.Choice(["threshold", "bootstrap"]),
    default="threshold",
    show_default=True,
    help="threshold: the point estimate's change decides; bootstrap: the change must also lie "
    "beyond noise (a paired bootstrap interval of the change wholly on the worse side of zero).",
)
@click.option(
    "--paired",
    type=click.Choice(["episodes", "tasks"]),
    default="episodes",
    show_default=True,
    help="What the bootstrap decision pairs: episodes of the same id, or tasks.",
)
@_resamples
@_seed
def compare(
    base: Path,
    candidate: Path,
    max_drop: float,
    max_rise: float | None,
    prom_path: Path | None,
    decision: str,
    paired: str,
    resamples: int,
    seed: int,
) -> None:
    """Exit 1 when CANDIDATE regressed against BASE: a rate that is better higher (a pass rate)
    fell by more than --max-drop, or one that is better lower (memorization index, stale-rule,
    cheating, false-report, tamper rates) rose by more than --max-rise; the withheld pass
    rate either (with --decision bootstrap: and beyond noise). Exit 0 otherwise. The table's
    `better` column says each metric's direction (docs/metrics.md)."""
    from termgym.report import compare_runs, write_prometheus

    base_run, cand_run = _load(base, resamples, seed), _load(candidate, resamples, seed)
    checks = compare_runs(
        base_run,
        cand_run,
        max_drop=max_drop,
        max_rise=max_rise,
        decision=decision,
        paired=paired,
        resamples=max(resamples, 1),
        seed=seed,
    )
    console = Console()
    table = Table(title=shown(f"{base.name} -> {candidate.name}"))
    columns = ["agent", "metric", "better", "base", "candidate", "change", "limit"]
    if decision == "bootstrap":
        columns.append(f"paired change ({paired})")
    for name in (*columns, ""):
        table.add_column(name, justify="left" if name in ("agent", "metric", "better") else "right")
    for c in checks:
        change = "" if c.change is None else f"{c.change * 100:+.1f} pts"
        status = (
            "[red]REGRESSED[/]"
            if c.regressed
            else ("[dim]skipped[/]" if c.note else "[green]ok[/]")
        )
        cells = [
            shown(c.agent),
            shown(c.metric),
            c.direction if c.metric not in _SCOPE else "",
            c.base.format(),
            c.candidate.format(),
            change,
            f"{c.limit * 100:.1f} pts",
        ]
        if decision == "bootstrap":
            cells.append(_paired_cell(c.paired))
        table.add_row(*cells, status)
    console.print(table)
    if prom_path is not None:
        _writing(
            "--prometheus", prom_path, lambda: write_prometheus([base_run, cand_run], prom_path)
        )
    from termgym.report import gate_notes

    for note in gate_notes(base_run, cand_run):  # what the gate did not count, and why
        click.echo(f"UNVERIFIED: {note}")
    regressions = [c for c in checks if c.regressed]
    for c in regressions:
        click.echo(f"REGRESSION: {printable(c.describe())}")
    if regressions:
        raise SystemExit(1)
    click.echo(f"no regression ({len(checks)} checks)")


_SCOPE = frozenset({"episodes", "tasks", "rates"})
"""Checks of the runs' scope, which have no direction."""


def _paired_cell(e: Estimate | None) -> str:
    if e is None or e.value is None:
        return ""
    bounds = (
        "" if e.low is None or e.high is None else f" [{e.low * 100:+.1f}, {e.high * 100:+.1f}]"
    )
    return f"{e.value * 100:+.1f}{bounds} n={e.n}"
