"""Where a text spells a rule value: the one matcher the trace audit and `termgym check` share.

A number is spelled by any numeric token of the same value: `250` by "250", "250.00",
"250EUR", "€250", never by "1250", "x250", "250.5", "v2.250" or "250_000". A string is
spelled by its characters ignoring case, as a whole token (no letter, digit or `_` glued to
an end that is itself one: "Team Planning Meeting" in "the Team Planning Meeting's room",
not "sunday" in "sundays").

Ignoring case finds the same value written in a sentence ("run on sunday" for `Sunday`),
and also words that only look like it: a solution's "Scheduled team planning meeting" is
not the title `Team Planning Meeting`. What tells them apart is the task's own vocabulary
(`other_spellings`): a spelling of the value that the task's own texts use outside the
rule's occurrences is one of the task's words, not the rule, and is never evidence that an
agent knew the rule. The exact spelling always is.

Booleans, integers below MIN_AUDITED_INT and strings shorter than MIN_AUDITED_STR are too
common to attribute to a rule: `audited` says so, and nothing matches them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass

MIN_AUDITED_INT = 10
MIN_AUDITED_STR = 3
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\d_]|\.\d)")
"""A numeric token: digits, a decimal part, a unit or any non-word character after it."""

Value = int | float | str | bool | None

__all__ = [
    "MIN_AUDITED_INT",
    "MIN_AUDITED_STR",
    "NUMBER",
    "Spelled",
    "audited",
    "is_number",
    "spellings",
    "value_text",
]


@dataclass(frozen=True)
class Spelled:
    """Where a text spells a value: [start, end) and the characters found there."""

    start: int
    end: int
    text: str


def is_number(value: object) -> bool:
    """An int or a float (a bool is neither here)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def value_text(value: Value) -> str:
    """The value as its task writes it: numbers as Python prints them, strings as they are."""
    return str(value)


def audited(value: object) -> bool:
    """Whether a value is distinctive enough to attribute to a rule: not a bool or None, not
    an integer below MIN_AUDITED_INT, not a string shorter than MIN_AUDITED_STR."""
    if isinstance(value, bool) or value is None:
        return False
    if is_number(value):
        number = float(value)  # type: ignore[arg-type]
        return not (number.is_integer() and abs(number) < MIN_AUDITED_INT)
    return len(str(value)) >= MIN_AUDITED_STR


def _glued(text: str, start: int, end: int) -> bool:
    """A letter, digit or `_` touches an end of text[start:end] that is itself one."""
    word = re.compile(r"\w")
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    return bool(
        (before and word.match(before) and word.match(text[start]))
        or (after and word.match(after) and word.match(text[end - 1]))
    )


def spellings(value: object, text: str, other_spellings: Collection[str] = ()) -> Iterator[Spelled]:
    """Every place `text` spells `value` (module docstring), in order; none for a value that
    is not `audited`.

    Args:
        value: A rule value (a number compares by value; a negative one by its magnitude).
        text: Where to look.
        other_spellings: Spellings of a string value that are the task's own words, not the
            rule (compared exactly); never the value's exact text.
    """
    if not audited(value):
        return
    if is_number(value):
        wanted = abs(float(value))  # type: ignore[arg-type]
        for match in NUMBER.finditer(text):
            if float(match.group(1)) == wanted:
                yield Spelled(match.start(1), match.end(1), match.group(1))
        return
    exact = str(value)
    pattern = re.compile(re.escape(exact), re.I)
    for match in pattern.finditer(text):
        found = match.group(0)
        if _glued(text, match.start(), match.end()):
            continue
        if found != exact and found in other_spellings:
            continue
        yield Spelled(match.start(), match.end(), found)
