"""`termgym demo`: the oracle and the memorizer over the bundled tasks, then the report."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.console import Console

from termgym._vocabulary import VARIANTS, Variant
from termgym.cli._options import task_paths, variant_list
from termgym.errors import TermgymError
from termgym.run import RunConfig, RunSummary

DEMO_AGENTS = ("oracle", "memorizer")


def backend_choice(backend: str | None) -> tuple[str, str]:
    """The backend the demo runs on, and why (for the person watching)."""
    from termgym.sandbox import bwrap_works, default_backend, docker_answers

    if backend:
        return backend, "asked for with --backend"
    if docker_answers():
        return "docker", "a Docker engine answers"
    if bwrap_works():
        return "bwrap", "no Docker engine answers, so the daemon-free bubblewrap backend is used"
    return default_backend(), ""  # raises BackendUnavailable, saying how to get one


def run_demo(
    out: Path | None = None,
    *,
    backend: str | None = None,
    tasks: tuple[str, ...] = ("*",),
    variants: tuple[Variant, ...] = VARIANTS,
    concurrency: int = 2,
    console: Console | None = None,
    paths: tuple[str, ...] = (),
) -> list[RunSummary]:
    """Run the demo's agents, print the pooled report, and say how to replay the episodes."""
    from termgym.cli.run_cmds import execute
    from termgym.report import load_run, merge_runs, print_report, write_html

    console = console or Console()
    out = out or Path("runs") / f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    name, why = backend_choice(backend)
    console.print(f"[bold]termgym demo[/]: backend [bold]{name}[/] ({why}).")
    console.print(
        "The oracle first reads what the task shows (it lists the workdir and reads the files "
        "that state the rules), then applies its solution step by step; the memorizer skips "
        "the reading and applies the original rule values whatever the task now says, like a "
        "model that learned a hidden grader.\n"
    )
    summaries = []
    began = time.monotonic()
    for agent in DEMO_AGENTS:
        config = RunConfig(
            agent=agent,
            tasks=tasks,
            variants=variants,
            concurrency=concurrency,
            out=out / agent,
            backend=name,
            paths=paths,
        )
        summaries.append(execute(config))
    wall = time.monotonic() - began
    runs = [load_run(summary.out) for summary in summaries]
    merged = merge_runs(runs)
    print_report(merged, console)
    html = write_html(merged, out / "report.html")
    episodes = sum(len(s.results) + len(s.skipped) for s in summaries)
    console.print(
        f"\n{episodes} episodes in {wall:.0f} s ({60 * episodes / max(wall, 1e-9):.1f} "
        f"episodes per minute).\nHTML report: {html}\n"
        "Replay the episodes step by step:\n"
        f"    termgym tui {out / 'memorizer'}\n"
        f"    termgym tui {out / 'oracle'}",
        soft_wrap=True,
        highlight=False,
    )
    return summaries


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
@task_paths
def demo(
    backend: str | None,
    tasks: str,
    variants: str,
    concurrency: int,
    out: Path | None,
    paths: tuple[str, ...],
) -> None:
    """Run the oracle and the memorizer over every task and variant, and print the report.

    The memorizer applies the original rule values whatever the task says: its stale-rule
    rate should be near 100%, the oracle's adaptation rate 100%.
    """
    from termgym.sandbox import sandbox_spec

    try:
        if backend is not None:
            sandbox_spec(backend)
        run_demo(
            out,
            backend=backend,
            tasks=tuple(t.strip() for t in tasks.split(",") if t.strip()),
            variants=variant_list(variants),
            concurrency=concurrency,
            paths=paths,
        )
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from exc
