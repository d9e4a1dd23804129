"""`termgym demo`: the oracle and the memorizer over the bundled tasks, then the report."""

from __future__ import annotations

from pathlib import Path

import click

from termgym.errors import TermgymError


@click.command("demo")
@click.option("--backend", "-b", default=None, help="docker or bwrap (default: the best one).")
@click.option(
    "--tasks", default="*", show_default=True, help="Comma-separated globs over task ids."
)
@click.option(
    "--variants",
    default="original,contradicted,withheld,swapped,sampled",
    show_default=True,
    help="Comma-separated variants.",
)
@click.option("--concurrency", default=2, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Folder for the two runs (default: runs/demo-<time>).",
)
def demo(
    backend: str | None, tasks: str, variants: str, concurrency: int, out: Path | None
) -> None:
    """Run the oracle and the memorizer over every task and variant, and print the report.

    The memorizer applies the original rule values whatever the task says: its stale-rule
    rate should be near 100%, the oracle's adaptation rate 100%.
    """
    from termgym.demo import run_demo
    from termgym.sandbox import spec

    try:
        if backend is not None:
            spec(backend)
        run_demo(
            out,
            backend=backend,
            tasks=tuple(t.strip() for t in tasks.split(",") if t.strip()),
            variants=tuple(v.strip() for v in variants.split(",") if v.strip()),
            concurrency=concurrency,
        )
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from exc
