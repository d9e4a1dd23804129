"""Reference agents: oracle and memorizer run one of the task's solution scripts, then submit."""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Mapping
from typing import Any

from termgym.agents._base import SUBMIT, EpisodeContext, Reference
from termgym.errors import AgentError


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


def as_keystrokes(command: str) -> str:
    """The keys-mode notation that types `command` and presses Enter."""
    return command.replace("<", "<lt>").replace("\n", "<Enter>") + "<Enter>"


class ScriptAgent:
    """Runs one script from the episode's Reference as its first action, then submits.

    Subclasses choose the script and the withheld rules it is told about.
    """

    name = "script"
    privileged = True

    def __init__(self) -> None:
        self._context: EpisodeContext | None = None
        self._acted = False

    def reset(self, context: EpisodeContext) -> None:
        """Start an episode; the context must carry a Reference."""
        if context.reference is None:
            raise AgentError(
                f"agent {self.name!r} is privileged: expected context.reference with the "
                f"task's solution scripts, found None (task {context.task_id!r})"
            )
        self._context = context
        self._acted = False

    def act(self, observation: Mapping[str, Any]) -> str:
        """First call: the script as one command (or keystrokes). Afterwards: SUBMIT."""
        if self._context is None or self._context.reference is None:
            raise AgentError(f"agent {self.name!r}: act() called before reset()")
        if self._acted:
            return SUBMIT
        self._acted = True
        ref = self._context.reference
        script, rules = self.script(ref), self.withheld(ref)
        if self._context.mode == "keys":
            return as_keystrokes(script_oneliner(script, workdir=ref.workdir, withheld_rules=rules))
        return script_command(script, workdir=ref.workdir, withheld_rules=rules)

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
    """Runs the task's oracle solution, told the values of withheld rules: passes every variant."""

    name = "oracle"

    def script(self, reference: Reference) -> str:
        if not reference.oracle_script.strip():
            raise AgentError("agent 'oracle': expected the task's oracle script, found it empty")
        return reference.oracle_script

    def withheld(self, reference: Reference) -> Mapping[str, Any]:
        return reference.withheld_rules


class MemorizerAgent(ScriptAgent):
    """Runs the task's memorized solution (original rule values hard-coded), told nothing."""

    name = "memorizer"

    def script(self, reference: Reference) -> str:
        if not reference.memorized_script.strip():
            raise AgentError(
                "agent 'memorizer': expected the task's memorized script (task.yaml "
                "`memorized:`), found none"
            )
        return reference.memorized_script
