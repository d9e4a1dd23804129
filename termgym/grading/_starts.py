"""A grading job's record of the programs its hidden tests started, read into `ProgramStart`s.

The verifier's recorder (`termgym_inputprint`, injected from termgym/verifier/inputprint.py)
writes one JSON line per program a grader started as the agent's user, into the job's
result folder (which no program of the agent's can read or write). `parse_starts` reads
those lines on the host; `GraderResult` carries them and `_inputs.compare_inputs` compares
them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

RECORD = ".termgym-inputs.jsonl"
"""The record's name in a job's result folder (written by termgym.verifier.inputprint)."""


@dataclass(frozen=True)
class ProgramStart:
    """One program a hidden test started as the agent's user, as it was given.

    Temporary paths are normalized (`<tmp>/<dir0>/...`, `<tmp1>`); `named` maps "arg N" or
    "env NAME" to the hash of the file or folder it names; `given` maps each file the test
    wrote into its temporary folders since the agent's last program ended to its hash.
    `shared` is set for starts made by a fixture shared by every rule set (run once).
    """

    grader: str
    test: str
    ruleset: str
    index: int
    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str] = field(default_factory=dict)
    named: Mapping[str, str] = field(default_factory=dict)
    given: Mapping[str, str] = field(default_factory=dict)
    stdin: str | None = None
    shared: bool = False


def parse_starts(
    text: str | None, grader: str, rulesets: Sequence[str]
) -> tuple[tuple[ProgramStart, ...], tuple[str, ...]]:
    """The starts a job's record holds, and what in it could not be read.

    A line without a rule set (a script grader's, run per rule set) belongs to the run's
    only rule set."""
    if not text:
        return (), ()
    found: list[tuple[int, int, ProgramStart]] = []
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            found.append((int(raw["index"]), number, _start(raw, grader, rulesets)))
        except (ValueError, TypeError, KeyError) as exc:
            problems.append(
                f"grader {grader!r}: line {number} of its inputs record is unreadable "
                f"(expected one JSON object per program start, found {line[:80]!r}: {exc})"
            )
    # In start order; a script grader's starts each come from a process of their own (all
    # numbered 1), in the order they ended, which is their start order for a script.
    found.sort(key=lambda entry: entry[:2])
    starts = tuple(
        dataclasses.replace(start, index=position) for position, (_, _, start) in enumerate(found)
    )
    return starts, tuple(problems)


def _start(raw: Any, grader: str, rulesets: Sequence[str]) -> ProgramStart:
    if not isinstance(raw, dict):
        raise TypeError(f"expected an object, found {type(raw).__name__}")
    ruleset = str(raw.get("ruleset") or "")
    if not ruleset and len(rulesets) == 1:
        ruleset = rulesets[0]
    return ProgramStart(
        grader=grader,
        test=str(raw.get("test") or ""),
        ruleset=ruleset,
        index=0,
        argv=tuple(str(a) for a in raw["argv"]),
        cwd=str(raw.get("cwd") or ""),
        env={str(k): str(v) for k, v in dict(raw.get("env") or {}).items()},
        named={str(k): str(v) for k, v in dict(raw.get("named") or {}).items()},
        given={str(k): str(v) for k, v in dict(raw.get("given") or {}).items()},
        stdin=None if raw.get("stdin") is None else str(raw["stdin"]),
        shared=bool(raw.get("shared")),
    )
