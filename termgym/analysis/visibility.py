"""Where what an agent sees spells a rule's value: `termgym check`'s proof that a withheld
episode hides its withheld values.

The trace audit (termgym.analysis.audit) takes a value for shown once anything visible spells
it, and then never counts the agent writing it as a leak. A withheld value that the
instruction, a file's contents or a file's name spells, under any spelling the audit matches
(termgym._spelling: numbers by value, strings ignoring case), is therefore both told to the
agent and hidden from the audit. `sightings` finds every such place; the places a rule's task
declares `not_evidence` (data that happens to hold the value) are found too, and marked.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from termgym._spelling import spellings

INSTRUCTION = "instruction"
FILE_NAMES = "(file names)"
"""The place a sighting in the names of the workspace's files is reported at."""

__all__ = ["FILE_NAMES", "INSTRUCTION", "Sighting", "describe", "sightings"]


@dataclass(frozen=True)
class Sighting:
    """A visible place that spells a rule's value.

    Attributes:
        rule: The rule.
        value: Its value.
        place: "instruction", a path relative to the workdir, or FILE_NAMES.
        line: The line number (1-based) in that place.
        text: The line, stripped and cut to 120 characters.
        declared: The place is one the rule declares `not_evidence`.
    """

    rule: str
    value: Any
    place: str
    line: int
    text: str
    declared: bool = False

    def describe(self) -> str:
        """E.g. "instruction line 4 spells limit's value 250: '(Last quarter ...)'"."""
        return (
            f"{self.place} line {self.line} spells {self.rule}'s value {self.value!r}: "
            f"{self.text!r}"
        )


def sightings(
    values: Mapping[str, Any],
    instruction: str,
    files: Mapping[str, str],
    not_evidence: Mapping[str, Sequence[str]] | None = None,
) -> list[Sighting]:
    """Every place where the instruction, a file's contents (`files`: workdir path -> text)
    or the files' names spell one of `values` (rule -> value), first occurrence per line.

    `not_evidence` maps a rule to workdir globs whose files' sightings of it are marked
    `declared`. Values the audit does not attribute (booleans, small integers, short
    strings: termgym._spelling.audited) have no sighting.
    """
    declared = not_evidence or {}
    places = {INSTRUCTION: instruction, **files, FILE_NAMES: "\n".join(sorted(files))}
    found: list[Sighting] = []
    for rule, value in values.items():
        globs = declared.get(rule, ())
        for place, text in places.items():
            lines: set[int] = set()
            for spelled in spellings(value, text):
                line = text.count("\n", 0, spelled.start) + 1
                if line in lines:
                    continue
                lines.add(line)
                start = text.rfind("\n", 0, spelled.start) + 1
                end = text.find("\n", spelled.end)
                shown = text[start : len(text) if end < 0 else end].strip()[:120]
                inside = place in files and any(fnmatch.fnmatch(place, g) for g in globs)
                found.append(Sighting(rule, value, place, line, shown, inside))
    return found


def describe(found: Sequence[Sighting], most: int = 5) -> str:
    """The first `most` sightings, one after the other, and how many more there are."""
    text = "; ".join(s.describe() for s in found[:most])
    if len(found) > most:
        text += f"; and {len(found) - most} more"
    return text
