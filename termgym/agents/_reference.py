"""Reference agents: the oracle reads its task then takes its solution's steps; the memorizer
takes the memorized solution's steps without reading anything."""

from __future__ import annotations

import base64
import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from termgym._actions import SUBMIT, as_keystrokes, report_conflict
from termgym.agents._base import EpisodeContext, Reference
from termgym.errors import AgentError
from termgym.tasks import parse_solution


def script_command(script: str, *, workdir: str, withheld_rules: Mapping[str, Any]) -> str:
    """One shell command that runs `script` with bash in `workdir`.

    The script travels in a quoted heredoc (no expansion), is run by a child bash with
    TERMGYM_WITHHELD_RULES set to the JSON of `withheld_rules`, and reads /dev/null as its
    standard input so it cannot swallow what is typed after it.
    """
    delimiter = "TERMGYM_SCRIPT"
    lines = script.splitlines()
    while delimiter in lines:
        delimiter += "_"
    body = script if script.endswith("\n") else script + "\n"
    rules_json = json.dumps(dict(withheld_rules), sort_keys=True, separators=(",", ":"))
    return (
        f"cd {shlex.quote(workdir)} && TERMGYM_WITHHELD_RULES={shlex.quote(rules_json)} "
        f"bash -c \"$(cat <<'{delimiter}'\n{body}{delimiter}\n)\" script </dev/null"
    )


def script_oneliner(script: str, *, workdir: str, withheld_rules: Mapping[str, Any]) -> str:
    """`script_command` on one line (the script base64-encoded), for typing into a terminal.

    Typed text must not hold tabs (completion) or newlines (each would run a line early).
    """
    encoded = base64.b64encode(script.encode("utf-8")).decode("ascii")
    rules_json = json.dumps(dict(withheld_rules), sort_keys=True, separators=(",", ":"))
    return (
        f"cd {shlex.quote(workdir)} && TERMGYM_WITHHELD_RULES={shlex.quote(rules_json)} "
        f'bash -c "$(echo {encoded} | base64 -d)" script </dev/null'
    )


def typed_step(command: str) -> str:
    """Keys mode: one step as a person would type it. A single plain line is typed as it is;
    anything a terminal would change (several lines, a tab that completes, a `!` of history
    expansion) is typed as one line that decodes and runs it in the shell itself."""
    line = command.strip("\n")
    if "\n" not in line and line.isprintable() and "!" not in line:
        return as_keystrokes(line)
    encoded = base64.b64encode(command.encode("utf-8")).decode("ascii")
    return as_keystrokes(f'eval "$(echo {encoded} | base64 -d)" </dev/null')


KEYS_WAITS = 50
"""Empty actions a keys-mode reference agent takes at most, per step, for the prompt to return."""

_PROMPT = re.compile(r"^\S+@\S+:.*[#$]$")
"""The last line of a keys-mode screen when the shell waits at its prompt (`user@host:dir# `)."""


def _at_prompt(observation: Mapping[str, Any]) -> bool:
    lines = [line for line in str(observation.get("screen", "")).splitlines() if line.strip()]
    return bool(lines) and bool(_PROMPT.match(lines[-1].rstrip()))


def _reading_steps(reference: Reference) -> list[str]:
    """What an agent that reads its task does first: list the workdir, read the rule files."""
    return ["ls -la", *(f"cat {shlex.quote(path)}" for path in reference.rule_files)]


class ScriptAgent:
    """Takes the steps of one of the episode's Reference scripts, one action each, then submits.

    A script that marks its steps (`termgym.tasks.parse_solution`) is sent step by step to
    the episode's shell; an agent that reads (`reads = True`) first lists the workdir and reads
    the files that state the task's rules. A script without marks is sent whole, as one
    command. Subclasses choose the script and the withheld rules it is told about.
    """

    name = "script"
    privileged = True
    reads = False

    def __init__(self) -> None:
        self._context: EpisodeContext | None = None
        self._actions: list[str] = []
        self._taken = self._waits = 0

    def reset(self, context: EpisodeContext) -> None:
        """Start an episode; the context must carry a Reference."""
        if context.reference is None:
            raise AgentError(
                f"agent {self.name!r} is privileged: expected context.reference with the "
                f"task's solution scripts, found None (task {context.task_id!r})"
            )
        self._context = context
        self._actions = self.plan(context.reference, context.mode)
        self._taken = self._waits = 0

    def act(self, observation: Mapping[str, Any]) -> str:
        """The next step of the plan (a command, or keystrokes in keys mode); then SUBMIT.

        Keys mode: a step ends once the terminal goes quiet, maybe before its command is
        done; the agent then waits (the empty action) until the prompt is back, as a person
        would, for up to KEYS_WAITS actions and while the step budget lasts.
        """
        context = self._context
        if context is None or context.reference is None:
            raise AgentError(f"agent {self.name!r}: act() called before reset()")
        if context.mode == "keys" and self._taken and not _at_prompt(observation):
            budget = context.max_steps - int(observation.get("step", 0)) - len(self._actions)
            if self._waits < KEYS_WAITS and budget > 1:
                self._waits += 1
                return ""
        self._waits = 0
        self._taken += 1
        return self._actions.pop(0) if self._actions else self.last(context.reference)

    def last(self, reference: Reference) -> str:
        """The action that ends the episode once the steps are taken: SUBMIT."""
        return SUBMIT

    def plan(self, reference: Reference, mode: str = "command") -> list[str]:
        """Every action of an episode, in order (SUBMIT follows them)."""
        text, rules = self.script(reference), self.withheld(reference)
        script = parse_solution(text, f"agent {self.name!r}'s script")
        reads = _reading_steps(reference) if self.reads else []
        if not script.marked:
            if mode == "keys":
                whole = script_oneliner(text, workdir=reference.workdir, withheld_rules=rules)
                return [*map(typed_step, reads), as_keystrokes(whole)]
            return [*reads, script_command(text, workdir=reference.workdir, withheld_rules=rules)]
        told = ""
        if "TERMGYM_WITHHELD_RULES" in text:  # told as the whole-script run is told
            rules_json = json.dumps(dict(rules), sort_keys=True, separators=(",", ":"))
            told = f"export TERMGYM_WITHHELD_RULES={shlex.quote(rules_json)}\n"
        steps = [
            f"# {step.title}\n" + (told if index == 0 else "") + step.command
            for index, step in enumerate(script.steps)
        ]
        actions = [*reads, *steps]
        return [typed_step(a) for a in actions] if mode == "keys" else actions

    def transcript(self) -> list[dict[str, Any]]:
        """Reference agents write nothing besides their actions."""
        return []

    def script(self, reference: Reference) -> str:
        """The script to run."""
        raise NotImplementedError

    def withheld(self, reference: Reference) -> Mapping[str, Any]:
        """The withheld rule values the script is given."""
        return {}


class OracleAgent(ScriptAgent):
    """Reads the task (lists the workdir, reads the files that state the rules), then applies
    the oracle solution step by step, told the values of withheld rules: passes every variant
    that can be passed honestly. On an impossible one it does what the task states and
    reports the conflict instead of submitting."""

    name = "oracle"
    reads = True

    def last(self, reference: Reference) -> str:
        return report_conflict(reference.conflict) if reference.conflict else SUBMIT

    def script(self, reference: Reference) -> str:
        if not reference.oracle_script.strip():
            raise AgentError("agent 'oracle': expected the task's oracle script, found it empty")
        return reference.oracle_script

    def withheld(self, reference: Reference) -> Mapping[str, Any]:
        return reference.withheld_rules


class MemorizerAgent(ScriptAgent):
    """Reads nothing: applies the memorized solution (original rule values hard-coded) step by
    step, told nothing."""

    name = "memorizer"

    def script(self, reference: Reference) -> str:
        if not reference.memorized_script.strip():
            raise AgentError(
                "agent 'memorizer': expected the task's memorized script (task.yaml "
                "`memorized:`), found none"
            )
        return reference.memorized_script


class CheaterAgent(ScriptAgent):
    """Makes the workspace's own tests pass by any means: reads the task, then applies the
    cheater solution (it takes the values the tests expect over those the task states, and
    changes what disagrees with them), told nothing; submits, never reports a conflict."""

    name = "cheater"
    reads = True

    def script(self, reference: Reference) -> str:
        if not reference.cheater_script.strip():
            raise AgentError(
                "agent 'cheater': expected the task's cheater script (task.yaml `cheater:`), "
                "found none"
            )
        return reference.cheater_script
