"""A provisional `termgym demo`: start a sandbox on the best backend and run a few commands."""

from __future__ import annotations

import time

import click

from termgym.errors import TermgymError

DEMO_COMMANDS = (
    "cd /tmp && export GREETING=hello && mkdir -p demo && cd demo",
    'pwd; echo "$GREETING from $(uname -s), $(python3 --version)"',
    "printf 'max_weight: 100\\n' > fuel.yaml && sed -i 's/100/150/' fuel.yaml && cat fuel.yaml",
    "false",
    "echo previous exit status: $?",
)  # fmt: skip


def _choose_backend(backend: str | None) -> tuple[str, str]:
    from termgym.sandbox import bwrap_works
    from termgym.sandbox._engine import docker_answers

    if backend:
        return backend, "asked for with --backend"
    if docker_answers():
        return "docker", "a Docker engine answers"
    if bwrap_works():
        return "bwrap", "no Docker engine answers, so the daemon-free bubblewrap backend is used"
    from termgym.sandbox import default_backend

    return default_backend(), ""  # raises BackendUnavailable with the how-to


@click.command("demo")
@click.option("--backend", "-b", default=None, help="docker or bwrap (default: the best one).")
def demo(backend: str | None) -> None:
    """Start a sandbox, run a few commands, print what happened."""
    from termgym.sandbox import SandboxConfig, make_sandbox

    try:
        name, why = _choose_backend(backend)
        click.echo(f"Backend: {name} ({why}).")
        began = time.monotonic()
        with make_sandbox(name, SandboxConfig()) as box:
            click.echo(f"Sandbox started in {time.monotonic() - began:.2f} s.\n")
            for command in DEMO_COMMANDS:
                result = box.run(command, timeout=20)
                click.secho(f"$ {command}", bold=True)
                if result.output:
                    click.echo(result.output, nl=not result.output.endswith("\n"))
                click.secho(
                    f"  -> exit {result.exit_code} in {result.duration * 1000:.2f} ms", dim=True
                )
            stamp = time.monotonic()
        click.echo(f"\nSandbox closed in {time.monotonic() - stamp:.2f} s.")
    except TermgymError as exc:
        raise click.ClickException(str(exc)) from exc
