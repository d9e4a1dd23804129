"""`termgym run`: evaluate an agent across tasks and rule variants."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from termgym._terminal_text import shown
from termgym._vocabulary import VARIANTS
from termgym.cli._options import task_paths, variant_list
from termgym.cli.import_cmds import OVERLAYS_OPTION
from termgym.errors import TermgymError
from termgym.run import (
    EpisodeDone,
    MetricsServing,
    ProgressEvent,
    Retrying,
    RunConfig,
    Runner,
    RunPlanned,
    RunSummary,
)
from termgym.sandbox import Stopped
from termgym.tasks import CONTRADICT_MODES, ROTATIONS, SECRET_ENV, SPLITS, Rotation

console = Console(stderr=True)


def _parse_options(pairs: tuple[str, ...]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--agent-opt")
        options[key.replace("-", "_")] = value
    return options


def execute(config: RunConfig, *, quiet: bool = False, linger: float = 0.0) -> RunSummary:
    """Run with a progress bar (unless quiet) and print a one-line outcome per problem.

    With live metrics, the server keeps serving `linger` seconds after the last episode so
    that a scraper sees the final counts, then stops.
    """
    if quiet:
        runner = Runner(config)
        try:
            return runner.run()
        finally:
            _linger(runner, linger)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        bar = progress.add_task(config.agent, total=None, status="")
        counts = {"ok": 0, "agent-error": 0, "infra-error": 0, "grader-error": 0, "retries": 0}

        def hook(event: ProgressEvent) -> None:
            if isinstance(event, RunPlanned):
                progress.update(
                    bar,
                    total=event.total,
                    completed=event.skipped,
                    status=f"{event.skipped} already done" if event.skipped else "",
                )
            elif isinstance(event, EpisodeDone):
                result = event.result
                counts[result.status] += 1
                if result.episode_class == "grader-error":
                    counts["grader-error"] += 1
                progress.advance(bar)
                progress.update(bar, status=_status(counts))
                if result.status != "ok" or result.episode_class == "grader-error":
                    progress.console.print(
                        f"[yellow]{shown(result.job.episode_id)}[/]: {result.status}: "
                        f"{shown(result.error or '')}"
                    )
            elif isinstance(event, MetricsServing):
                progress.console.print(
                    f"[dim]live metrics: http://127.0.0.1:{event.port}/metrics "
                    "(docs/monitoring.md)[/]"
                )
            elif isinstance(event, Retrying):
                counts["retries"] += 1
                progress.console.print(
                    f"[dim]{shown(event.job.episode_id)}: attempt {event.attempt} hit an "
                    f"infrastructure error, retrying: {shown(event.error)}[/]"
                )

        runner = Runner(config, progress=hook)
        try:
            summary = runner.run()
        finally:
            if runner.left_out:
                progress.console.print(
                    f"[yellow]left out of split 'eval'[/]: {shown('; '.join(runner.left_out))}"
                )
        _linger(runner, linger)
        return summary


def _linger(runner: Runner, seconds: float) -> None:
    if runner.metrics_port is not None and seconds > 0:
        time.sleep(seconds)
    runner.close()


def rotation_from(secret: str | None, scheme: str, period: str | None) -> Rotation | None:
    """The evaluator's rotation from --secret / $TERMGYM_SECRET, --rotation and --period."""
    if not secret:
        if period:
            raise click.BadParameter(
                "a period only means something with a secret", param_hint="--period"
            )
        return None
    try:
        return Rotation(secret, period) if period else Rotation.current(secret, scheme)  # type: ignore[arg-type]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--secret") from None


secret_options = [
    click.option(
        "--secret",
        envvar=SECRET_ENV,
        show_envvar=True,
        default=None,
        help="The evaluator's secret: sampled and held-out values derive from it and the "
        "rotation period. Never written into recordings, run.json or logs.",
    ),
    click.option(
        "--rotation",
        type=click.Choice(list(ROTATIONS)),
        default="week",
        show_default=True,
        help="Rotation period of the secret's draws (ISO week by default).",
    ),
    click.option(
        "--period",
        default=None,
        help="An explicit period (e.g. 2026-W49), to re-derive or audit a past evaluation.",
    ),
]


def _with(options: list[Any]) -> Any:
    def decorate(function: Any) -> Any:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def _status(counts: dict[str, int]) -> str:
    parts = [f"{counts['ok']} graded"]
    if counts["grader-error"]:
        parts.append(f"{counts['grader-error']} not gradable (scored 0)")
    if counts["agent-error"]:
        parts.append(f"{counts['agent-error']} agent errors")
    if counts["infra-error"]:
        parts.append(f"{counts['infra-error']} infrastructure errors")
    if counts["retries"]:
        parts.append(f"{counts['retries']} retries")
    return ", ".join(parts)


@click.command("run")
@click.option(
    "--agent",
    "agent",
    required=True,
    help="Agent name: oracle, memorizer, cheater, replay, noop, llm, or a plugin.",
)
@click.option(
    "--tasks", "tasks", default="*", show_default=True, help="Comma-separated globs over task ids."
)
@click.option(
    "--variants",
    default="original,contradicted,withheld",
    show_default=True,
    help="Comma-separated variants: original contradicted withheld swapped sampled impossible.",
)
@click.option(
    "--episodes",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Episodes per task and variant.",
)
@click.option("--concurrency", default=2, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Run folder (default: runs/<agent>-<time>). An existing run folder is resumed, by "
    "the agent, agent options, seed and rule draw of the run it holds.",
)
@click.option(
    "--backend", default=None, help="docker, bwrap or local (default: the best available)."
)
@click.option(
    "--runtime",
    default=None,
    help="Docker runtime for the sandboxes, e.g. runsc (gVisor); see docs/security.md.",
)
@task_paths
@click.option(
    "--import",
    "sources",
    multiple=True,
    metavar="SOURCE",
    help="Terminal-Bench or Harbor tasks to import first, into <out>/tasks, and run: a "
    "folder of them, or a git source git+URL@COMMIT[#subdirectory=DIR] (cloned, checked by "
    "hash). Repeatable.",
)
@OVERLAYS_OPTION
@click.option("--seed", default=0, show_default=True, type=int)
@click.option(
    "--ray",
    "ray_address",
    default=None,
    metavar="ADDRESS",
    help="Run the episodes on a Ray cluster: auto, local, or an address (docs/scaling.md).",
)
@click.option(
    "--agent-opt",
    "agent_opts",
    multiple=True,
    metavar="KEY=VALUE",
    help="Option for the agent, e.g. --agent-opt model=qwen --agent-opt base_url=...",
)
@click.option(
    "--agent-timeout",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds per episode for the agent.",
)
@click.option(
    "--retries",
    default=2,
    show_default=True,
    type=click.IntRange(min=0),
    help="Retries of an episode after an infrastructure failure.",
)
@click.option("--no-shadow", is_flag=True, help="Grade against the episode's own rules only.")
@click.option(
    "--split",
    type=click.Choice(list(SPLITS)),
    default="train",
    show_default=True,
    help="Values the shifted variants draw: training values, or the held-out ones (eval).",
)
@click.option(
    "--contradict",
    type=click.Choice(list(CONTRADICT_MODES)),
    default="drawn",
    show_default=True,
    help="contradicted: a non-original value drawn per episode, or the authored one (fixed).",
)
@_with(secret_options)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve the run's metrics live in Prometheus' format on 127.0.0.1:PORT/metrics.",
)
@click.option(
    "--metrics-linger",
    type=click.FloatRange(0),
    default=0.0,
    show_default=True,
    help="Seconds to keep serving the live metrics after the last episode.",
)
@click.option(
    "--report/--no-report", "show_report", default=True, help="Print the report at the end."
)
@click.option(
    "--atif",
    is_flag=True,
    help="Also write each episode as an ATIF trajectory (Harbor's format) in <out>/atif/.",
)
def run_command(
    agent: str,
    tasks: str,
    variants: str,
    episodes: int,
    concurrency: int,
    out: Path | None,
    backend: str | None,
    runtime: str | None,
    paths: tuple[str, ...],
    sources: tuple[str, ...],
    overlays: str | None,
    seed: int,
    ray_address: str | None,
    agent_opts: tuple[str, ...],
    agent_timeout: float | None,
    retries: int,
    no_shadow: bool,
    split: str,
    contradict: str,
    secret: str | None,
    rotation: str,
    period: str | None,
    metrics_port: int | None,
    metrics_linger: float,
    show_report: bool,
    atif: bool,
) -> None:
    """Evaluate AGENT across tasks and rule variants; resumable, Ctrl-C safe.

    With --import (and --overlays), the foreign tasks are imported into the run folder
    first and those with an overlay are run: the perturbation suite in one command
    (`termgym run --agent A --import SOURCE --overlays tb2`, docs/tb2.md)."""
    out = out or Path("runs") / f"{agent}-{time.strftime('%Y%m%d-%H%M%S')}"
    if sources:
        imported, refused = _import_first(sources, out / "tasks", overlays)
        paths = (str(out / "tasks"), *paths)
        tasks = ",".join(imported) if tasks == "*" else _without_refused(tasks, refused, paths)
    elif overlays:
        raise click.BadParameter(
            "expected --import SOURCE to apply them to", param_hint="--overlays"
        )
    task_globs = tuple(t.strip() for t in tasks.split(",") if t.strip())
    if not task_globs:
        raise click.BadParameter(
            f"expected at least one task id or glob, comma-separated; found {tasks!r}",
            param_hint="--tasks",
        )
    config = RunConfig(
        agent=agent,
        tasks=task_globs,
        variants=variant_list(variants),
        episodes=episodes,
        concurrency=concurrency,
        out=out,
        backend=backend,
        seed=seed,
        agent_options=_parse_options(agent_opts),
        agent_timeout=agent_timeout,
        retries=retries,
        shadow=not no_shadow,
        runtime=runtime,
        paths=paths,
        split=split,  # type: ignore[arg-type]
        contradict=contradict,  # type: ignore[arg-type]
        rotation=rotation_from(secret, rotation, period),
        metrics_port=metrics_port,
        ray=ray_address,
        atif=atif,
    )
    try:
        summary = execute(config, linger=metrics_linger)
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from None
    except (KeyboardInterrupt, Stopped):
        with contextlib.suppress(OSError):  # a terminal that hung up takes no more output
            console.print(
                f"The run folder {shown(str(out))} keeps every episode finished so far; the "
                f"same command with --out {shown(str(out))} resumes it."
            )
        raise
    console.print(
        f"{len(summary.results)} episodes run, {len(summary.skipped)} resumed from before, "
        f"in {summary.wall_seconds:.1f} s; recordings in {shown(str(summary.out))}"
    )
    if show_report:
        from termgym.report import load_run, print_report

        print_report(load_run(summary.out))
    if summary.infra_errors:
        raise SystemExit(3)


def _import_first(
    sources: tuple[str, ...], folder: Path, overlays: str | None
) -> tuple[list[str], dict[str, str]]:
    """Import `sources` into `folder` (only the overlaid tasks when `overlays` is given);
    the ids imported, and the refused tasks' folder names and ids -> why.

    Raises:
        click.ClickException: a source or the overlays cannot be read, or nothing imports.
    """
    from termgym.cli.import_cmds import summary_tail
    from termgym.errors import TaskError
    from termgym.importing import import_tasks, normalize_id

    try:
        report = import_tasks(
            list(sources), folder, overlays=overlays, overlaid_only=overlays is not None
        )
    except TaskError as exc:
        raise click.ClickException(str(exc)) from None
    for path, why in report.refused:
        console.print(f"[yellow]not imported[/] {shown(path.name)}: {shown(why)}")
    for path, why in report.passed_over:
        console.print(f"[dim]no task[/] {shown(path.name)}: {shown(why)}")
    if not report.converted:
        raise click.ClickException(
            f"no task of {', '.join(sources)} imported"
            + (f" with an overlay of {overlays}" if overlays else "")
        )
    console.print(
        f"{len(report.converted)} task(s) imported into {shown(str(folder))}"
        f"{shown(summary_tail(report))}"
    )
    refused = {}
    for path, why in report.refused:
        refused[path.name] = refused[normalize_id(path.name)] = why
    return [c.task_id for c in report.converted], refused


def _without_refused(tasks: str, refused: dict[str, str], paths: tuple[str, ...]) -> str:
    """--tasks less the globs that name only tasks refused at import (said, not run): the
    others must each match a task, as without --import."""
    import fnmatch

    from termgym.tasks import list_tasks

    if not refused:
        return tasks
    available = [t.id for t in list_tasks(paths)]
    kept = []
    for glob in (t.strip() for t in tasks.split(",") if t.strip()):
        hit = fnmatch.filter(refused, glob)
        if hit and not fnmatch.filter(available, glob):
            console.print(f"[yellow]not run[/] {shown(glob)}: refused at import (above)")
            continue
        kept.append(glob)
    if not kept:
        raise click.ClickException(
            f"every task --tasks names ({tasks}) was refused at import; nothing to run"
        )
    return ",".join(kept)


@click.command("play")
@click.argument("task")
@click.option(
    "--variant",
    default="original",
    show_default=True,
    help=f"{', '.join(VARIANTS[:-1])} or {VARIANTS[-1]} (the task must offer it).",
)
@click.option("--seed", type=int, default=None, help="Seed of the episode's rule values.")
@click.option("--backend", default=None, help="docker, bwrap or local (default: the best).")
@click.option(
    "--runtime",
    default=None,
    help="Docker runtime for the sandboxes, e.g. runsc (gVisor); see docs/security.md.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Run folder for the recording (default: runs/human-<time>).",
)
@task_paths
def play_command(
    task: str,
    variant: str,
    seed: int | None,
    backend: str | None,
    runtime: str | None,
    out: Path | None,
    paths: tuple[str, ...],
) -> None:
    """Solve TASK yourself in its sandbox's terminal.

    Ctrl-] ends the episode: submit it for grading, or report that the task contradicts
    itself (the honest answer to an impossible episode, as agents give it with
    REPORT_CONFLICT). `exit` in the shell submits. The end screen shows the rule values, each
    rule set's verdict and the `termgym tui` command that replays the recording.
    """
    from termgym.play import play
    from termgym.tasks import get_task

    out = out or Path("runs") / f"human-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        found = get_task(task, paths)
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        result = play(
            found, variant=variant, seed=seed, backend=backend, record_dir=out, runtime=runtime
        )
    except (TermgymError, ValueError) as exc:  # a variant or backend that cannot be had
        raise click.ClickException(str(exc)) from None
    if result.info.get("error"):
        raise click.ClickException(f"grading failed: {result.info['error']}")
