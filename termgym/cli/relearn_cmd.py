"""`termgym relearning`: episodes-to-recover after a rule switch, from a training log."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("relearning")
@click.argument("log", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--switch-at", type=click.IntRange(1), default=None, help="Episode of the switch.")
@click.option("--condition", default=None, help="The condition to read, in a log of several.")
@click.option(
    "--fraction",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.9,
    show_default=True,
    help="Share of the pre-switch pass rate that counts as recovered.",
)
@click.option("--window", type=click.IntRange(1), default=20, show_default=True)
@click.option("--resamples", type=click.IntRange(0), default=2000, show_default=True)
@click.option(
    "--svg", "svg_path", type=click.Path(path_type=Path), help="Write the curve to this SVG."
)
def relearning_command(
    log: Path,
    switch_at: int | None,
    condition: str | None,
    fraction: float,
    window: int,
    resamples: int,
    svg_path: Path | None,
) -> None:
    """Episodes-to-recover after the rule switch in LOG (JSONL lines {seed, episode, passed};
    see docs/metrics.md), per seed and as a mean with a bootstrap interval over seeds."""
    from termgym.analysis.relearning import read_training_log, recovery
    from termgym.report import relearning_svg

    try:
        found = recovery(
            read_training_log(log, switch_at, condition),
            fraction=fraction,
            window=window,
            resamples=resamples,
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    for seed, episodes in found.per_seed.items():
        value = "not recovered (censored)" if episodes is None else f"{episodes} episodes"
        click.echo(f"seed {seed}: pre-switch pass rate {found.pre_rate[seed]:.1%}, {value}")
    click.echo(f"episodes to recover: {found.format()}")
    if svg_path is not None:
        title = f"{condition}: pass rate across the rule switch" if condition else ""
        try:
            svg_path.parent.mkdir(parents=True, exist_ok=True)
            svg_path.write_text(relearning_svg(found, title=title), encoding="utf-8")
        except OSError as exc:
            raise click.BadParameter(
                f"expected a file that can be written at {svg_path}: {exc.strerror or exc}",
                param_hint="--svg",
            ) from None
        click.echo(f"curve: {svg_path}")
