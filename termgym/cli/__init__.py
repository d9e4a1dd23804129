"""The `termgym` command line: one click group, one module per command family."""

from __future__ import annotations

import importlib

import click

from termgym.cli._warnings import speak_plainly

# Each entry is "module:attribute" naming a click command or group; imported when the CLI starts.
COMMANDS: list[str] = [
    "termgym.cli.tui_cmd:tui",
    "termgym.cli.report_cmds:report",
    "termgym.cli.report_cmds:compare",
    "termgym.cli.sandbox_cmds:image",
    "termgym.cli.sandbox_cmds:gc",
    "termgym.cli.sandbox_cmds:sandbox",
    "termgym.cli.demo:demo",
    "termgym.cli.task_cmds:tasks",
    "termgym.cli.task_cmds:check",
    "termgym.cli.run_cmds:run_command",
    "termgym.cli.run_cmds:play_command",
    "termgym.cli.import_cmds:import_command",
    "termgym.cli.import_cmds:overlay",
    "termgym.cli.export_cmds:export",
    "termgym.cli.values_cmd:verify_values_command",
    "termgym.cli.relearn_cmd:relearning_command",
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="termgym")
@click.pass_context
def main(ctx: click.Context) -> None:
    """termgym: terminal tasks whose hidden graders can be changed per episode."""
    ctx.call_on_close(speak_plainly())  # warnings read as termgym's messages do


def _attach() -> None:
    for target in COMMANDS:
        module_name, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module_name), attr)
        main.add_command(command)


_attach()
