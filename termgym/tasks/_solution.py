"""A task's solution script split into the steps a reference agent takes, one command each.

A script marks its steps with comment lines of their own:

    #!/usr/bin/env bash
    # Reference solution: what it does.
    set -euo pipefail

    # step: write the planner, which reads the policy each time it runs
    cat > plan.py <<'PY'
    ...
    PY

    # step: run it on a sample manifest
    python3 plan.py manifests/TG101.json

`termgym check` runs the script whole, as before (a marker is a comment). A reference agent
sends each step's lines as one command to its episode's shell, in order, as an agent would
type them; what comes before the first marker (the prelude: a shebang, comments, `set`
options for the whole-script run) is never sent, so it may hold nothing else. A script
without markers is one step, run whole. Put no marker inside a heredoc's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from termgym.errors import TaskSpecError
from termgym.tasks._spec import TaskSpec

STEP_MARKER = re.compile(r"^#\s*step:\s*(?P<title>.*?)\s*$")
"""A line that starts a step: `# step: TITLE`."""

_PRELUDE_LINE = re.compile(r"^\s*(?:#.*|set(?:\s+[-+][\w-]*(?:\s+\w+)?)+\s*)?$")


@dataclass(frozen=True)
class SolutionStep:
    """One step of a solution script: its title and the shell lines sent as one command."""

    title: str
    command: str
    line: int


@dataclass(frozen=True)
class SolutionScript:
    """A solution script and its steps (none when the script marks no step)."""

    text: str
    steps: tuple[SolutionStep, ...]

    @property
    def marked(self) -> bool:
        """True when the script marks its steps (else a reference agent runs it whole)."""
        return bool(self.steps)


def parse_solution(text: str, where: str = "solution script") -> SolutionScript:
    """Split a solution script at its `# step:` lines.

    Raises:
        TaskSpecError: a step has no title or no command, or the prelude holds a command
            other than `set` (it would run under `termgym check` and never for an agent).
    """
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if STEP_MARKER.match(line)]
    if not starts:
        return SolutionScript(text, ())
    for number, line in enumerate(lines[: starts[0]], start=1):
        if not _PRELUDE_LINE.match(line):
            raise TaskSpecError(
                f"{where}: line {number}: expected only a shebang, comments and `set` options "
                f"before the first '# step:' line (reference agents never send them), found "
                f"{line.strip()!r}; move it into a step"
            )
    steps = []
    for index, start in enumerate(starts):
        match = STEP_MARKER.match(lines[start])
        assert match is not None
        title = match["title"]
        end = starts[index + 1] if index + 1 < len(starts) else len(lines)
        body = "\n".join(lines[start + 1 : end]).strip("\n")
        if not title:
            raise TaskSpecError(
                f"{where}: line {start + 1}: expected '# step: TITLE', found no title"
            )
        if not body.strip() or all(line.lstrip().startswith("#") for line in body.splitlines()):
            raise TaskSpecError(
                f"{where}: line {start + 1}: step {title!r} expected commands, found none"
            )
        steps.append(SolutionStep(title=title, command=body + "\n", line=start + 1))
    return SolutionScript(text, tuple(steps))


def rule_files(spec: TaskSpec) -> tuple[str, ...]:
    """The workdir paths of the files that state a task's rules (`stated_in`), in the order
    first named: what an oracle reads before it acts.

    Dot-files and files in dot folders are left out: material a task's setup consumes
    (git-release's .seed), not what the agent finds.
    """
    prefix = spec.files.rstrip("/") + "/"
    found: dict[str, None] = {}
    for rule in spec.rules.values():
        for place in rule.stated_in:
            if place == "instruction" or not place.startswith(prefix):
                continue
            rel = place[len(prefix) :]
            if not any(part.startswith(".") for part in rel.split("/")):
                found.setdefault(rel, None)
    return tuple(found)
