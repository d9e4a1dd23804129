"""The `termgym` command line: one click group, one module per command family.

A command's module is imported when the command runs (or when `--help` lists them all), so
that `termgym tui` starts without importing what `termgym run` needs.
"""

from __future__ import annotations

import importlib

import click

from termgym.cli._stopping import StoppableGroup
from termgym.cli._warnings import speak_plainly

COMMANDS: dict[str, str] = {
    "tui": "termgym.cli.tui_cmd:tui",
    "report": "termgym.cli.report_cmds:report",
    "compare": "termgym.cli.report_cmds:compare",
    "image": "termgym.cli.sandbox_cmds:image",
    "gc": "termgym.cli.sandbox_cmds:gc",
    "sandbox": "termgym.cli.sandbox_cmds:sandbox",
    "demo": "termgym.cli.demo:demo",
    "tasks": "termgym.cli.task_cmds:tasks",
    "check": "termgym.cli.task_cmds:check",
    "run": "termgym.cli.run_cmds:run_command",
    "play": "termgym.cli.run_cmds:play_command",
    "import": "termgym.cli.import_cmds:import_command",
    "overlay": "termgym.cli.import_cmds:overlay",
    "export": "termgym.cli.export_cmds:export",
    "verify-values": "termgym.cli.values_cmd:verify_values_command",
    "relearning": "termgym.cli.relearn_cmd:relearning_command",
}
"""Command name -> "module:attribute" of its click command or group."""


class LazyGroup(StoppableGroup):
    """The commands of `COMMANDS`, each imported the first time it is asked for; each stops
    on Ctrl-C, SIGTERM and SIGHUP alike (`termgym.cli._stopping`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module_name, _, attr = COMMANDS[cmd_name].partition(":")
            command = getattr(importlib.import_module(module_name), attr)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="termgym")
@click.pass_context
def main(ctx: click.Context) -> None:
    """termgym: terminal tasks whose hidden graders can be changed per episode."""
    ctx.call_on_close(speak_plainly())  # warnings read as termgym's messages do
