"""Image and sandbox commands: `termgym image build-base|build-stand-in`, `gc`, `sandbox`."""

from __future__ import annotations

import sys
import time

import click

from termgym._terminal_text import printable
from termgym.errors import BackendUnavailable, TermgymError


@click.group("image")
def image() -> None:
    """Build the images tasks run in."""


@image.command("build-base")
@click.option("--force", is_flag=True, help="Rebuild even when the recipe is unchanged.")
def build_base_cmd(force: bool) -> None:
    """Build termgym/base:bookworm (Debian bookworm with bash, python3, tmux ...); cached."""
    from termgym.images import BASE_IMAGE, build_base, debootstrap_home, rootfs_for

    started = time.monotonic()
    try:
        image_id = build_base(force=force, log=click.echo)
    except BackendUnavailable as exc:
        click.echo(f"{exc}\nPreparing the bubblewrap root filesystem instead.", err=True)
        try:
            rootfs = rootfs_for(BASE_IMAGE, log=click.echo)  # as root, owned by shifted ids
        except TermgymError as inner:
            raise click.ClickException(str(inner)) from inner
        click.echo(f"Base root filesystem for bwrap: {rootfs}")
        if force:  # sandboxes may be running over it: it is not removed from under them
            made = sorted({str(rootfs.parent), str(debootstrap_home())})
            raise click.ClickException(
                "--force rebuilds the Docker image, and no Docker engine answered: the "
                "bubblewrap root filesystem above was kept as it is. To make it again, stop "
                f"every sandbox, remove {' and '.join(made)}, and run `termgym image "
                "build-base`."
            ) from exc
        return
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from exc
    took = time.monotonic() - started
    click.echo(f"{BASE_IMAGE} = {image_id[:19]} ({took:.1f} s)")


@image.command("build-stand-in")
@click.argument("images", nargs=-1, required=True)
def build_stand_in_cmd(images: tuple[str, ...]) -> None:
    """Build the local stand-ins of registry IMAGES (python:3.13-slim-bookworm, ubuntu:24.04 ...)
    that imported tasks are built FROM; cached, so a second call takes seconds."""
    from termgym.images import ensure_local_base, known_bases, map_base

    for name in images:
        mapping = map_base(name)
        if mapping is None:
            raise click.ClickException(
                f"no local stand-in for {name!r}: expected one of " + ", ".join(known_bases())
            )
        started = time.monotonic()
        try:
            tag = ensure_local_base(mapping.base, log=click.echo)
        except TermgymError as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(f"{name} -> {tag} ({time.monotonic() - started:.1f} s)")


@click.command("gc")
@click.option("--all", "everything", is_flag=True, help="Also remove sandboxes still in use.")
@click.option(
    "--run",
    "run_id",
    default=None,
    metavar="ID",
    help="Only the sandboxes of this run (its id: the run folder's name, or --run-id).",
)
@click.option("--dry-run", is_flag=True, help="Remove nothing: name what would be removed.")
def gc(everything: bool, run_id: str | None, dry_run: bool) -> None:
    """Remove sandboxes termgym left behind (their starting process is gone).

    Every user's leftovers on this machine, unless --run names one run."""
    from termgym.sandbox import collect_bwrap_garbage, collect_garbage

    if run_id is not None and not run_id.strip():
        raise click.BadParameter("expected a run id, found an empty one", param_hint="--run")
    labels = {"io.termgym.run": run_id} if run_id else None
    try:
        removed = collect_bwrap_garbage(labels=labels, dry_run=dry_run)
        try:
            removed += collect_garbage(everything=everything, labels=labels, dry_run=dry_run)
        except BackendUnavailable:
            click.echo("No Docker engine answered: no containers looked at.", err=True)
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from exc
    scope = f" of run {printable(run_id)}" if run_id else ""
    verb = "Would remove" if dry_run else "Removed"
    click.echo(f"{verb} {len(removed)} leftover sandbox(es){scope}.")
    for name in removed:
        click.echo(f"  {name}")


@click.group("sandbox")
def sandbox() -> None:
    """Start a sandbox by hand: run commands in it, or type into its shell."""


@sandbox.command("run")
@click.argument("commands", nargs=-1, required=True)
@click.option("--backend", "-b", default=None, help="docker, bwrap or local (default: best).")
@click.option("--image", "image_ref", default=None, help="Image to run (default: base image).")
@click.option("--network", is_flag=True, help="Give the sandbox a network.")
@click.option("--timeout", default=30.0, show_default=True, help="Seconds per command.")
def run_cmd(
    commands: tuple[str, ...], backend: str | None, image_ref: str | None, network: bool,
    timeout: float,
) -> None:  # fmt: skip
    """Run COMMANDS one after another in one sandbox's persistent shell."""
    from termgym.images import BASE_IMAGE
    from termgym.sandbox import SandboxConfig, make_sandbox

    config = SandboxConfig(image=image_ref or BASE_IMAGE, network=network)
    try:
        with make_sandbox(backend, config, allow_local=backend == "local") as box:
            click.echo(f"[{box.backend}]", err=True)
            for command in commands:
                result = box.run(command, timeout=timeout)
                sys.stdout.write(result.output)
                flags = [k for k in ("timed_out", "truncated", "restarted") if getattr(result, k)]
                click.echo(
                    f"[exit {result.exit_code}, {result.duration * 1000:.1f} ms"
                    + (", " + ", ".join(flags) if flags else "")
                    + "]",
                    err=True,
                )
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from exc


@sandbox.command("shell")
@click.option("--backend", "-b", default=None, help="docker, bwrap or local (default: best).")
@click.option("--image", "image_ref", default=None, help="Image to run (default: base image).")
@click.option("--network", is_flag=True, help="Give the sandbox a network.")
def shell_cmd(backend: str | None, image_ref: str | None, network: bool) -> None:
    """A line-by-line prompt into a sandbox's persistent shell (what an agent sees)."""
    from termgym.images import BASE_IMAGE
    from termgym.sandbox import SandboxConfig, make_sandbox

    config = SandboxConfig(image=image_ref or BASE_IMAGE, network=network)
    try:
        with make_sandbox(backend, config, allow_local=backend == "local") as box:
            click.echo(f"termgym sandbox on {box.backend}; Ctrl-D leaves.", err=True)
            while True:
                try:
                    line = input("$ ")
                except EOFError:
                    break
                result = box.run(line)
                sys.stdout.write(result.output)
                if result.output and not result.output.endswith("\n"):
                    sys.stdout.write("\n")
                if result.exit_code not in (0, None) or result.timed_out or result.restarted:
                    click.echo(f"[exit {result.exit_code}]", err=True)
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from exc
