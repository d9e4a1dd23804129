"""Rule overlays: rules declared by where their values occur literally in a task's files.

An overlay (`overlay.yaml` beside task.yaml) perturbs a task without rewriting it: each rule
names its original value and every place that value occurs, as a literal pattern holding
it. The loader turns each overlay rule into a RuleSpec whose `occurs` are resolved to exact
spans; the variants then rewrite those spans (contradicted, sampled), drop them from what
the agent sees (withheld), and the oracle is the solution with its spans rewritten. Text
the overlay does not name is never touched.

Below both `termgym.tasks` (the loader, the variants) and `termgym.importing` (converting a
foreign task with its overlay), which import it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from termgym._spelling import spellings
from termgym.errors import TaskSpecError

__all__ = [
    "INSTRUCTION",
    "OVERLAY_FILE",
    "OccurrenceSpec",
    "OverlayFile",
    "OverlayRule",
    "Span",
    "check_disjoint",
    "find_spans",
    "read_overlay",
    "rewrite",
    "rule_fields",
    "rule_type",
    "task_words",
    "value_text",
    "whole_token",
]

OVERLAY_FILE = "overlay.yaml"
"""The overlay beside a task's task.yaml."""

INSTRUCTION = "instruction"
"""An occurrence's `file` naming the task's instruction."""


class OccurrenceSpec(BaseModel):
    """One place a rule's value occurs: a literal pattern in a file that holds the value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str
    pattern: str = Field(min_length=1)
    count: int = Field(default=1, ge=1)
    withheld: str = ""
    """What replaces the whole pattern in withheld episodes (default: nothing)."""
    values: dict[str, str] | None = None
    """For an occurrence that states something the rule decides rather than the rule's
    value itself (an expected count or list in a test): its text for each value the rule
    can take. The pattern holds the original's text once; an episode puts its value's text
    in its place."""

    @field_validator("values", mode="before")
    @classmethod
    def _keys_as_text(cls, data: object) -> object:
        if isinstance(data, dict):
            return {value_text(k) if isinstance(k, int | float | bool) else k: v
                    for k, v in data.items()}  # fmt: skip
        return data


class OverlayRule(BaseModel):
    """One overlay rule: its original value, the values variants use, where it occurs."""

    model_config = ConfigDict(extra="forbid")

    original: int | float | str | bool
    choices: list[int | float | str | bool] = Field(default_factory=list)
    range: tuple[float, float] | None = None
    contradict: int | float | str | bool | None = None
    withhold: bool = True
    description: str = ""
    occurs: list[OccurrenceSpec] = Field(min_length=1)
    not_evidence: list[str] = Field(default_factory=list)
    """Files the agent sees (globs relative to the workdir, the image's files included) whose
    occurrences of the rule's values are data, not the rule (task.yaml's `not_evidence`)."""

    @model_validator(mode="after")
    def _values(self) -> OverlayRule:
        if self.contradict is None and not self.choices:
            raise ValueError(
                "expected `choices` (the first is what contradicted episodes use) or "
                "`contradict`, found neither"
            )
        if self.original in self.choices:
            raise ValueError(
                f"choices: expected values other than the original {self.original!r}, "
                f"found it among {self.choices}"
            )
        self.occurs = [self._derived(i, occ) for i, occ in enumerate(self.occurs)]
        return self

    def values_taken(self) -> list[int | float | str | bool]:
        """Every value an episode can give the rule: the original, the choices, contradict."""
        taken = [self.original, *self.choices]
        if self.contradict is not None and self.contradict not in taken:
            taken.append(self.contradict)
        return taken

    def _derived(self, index: int, occ: OccurrenceSpec) -> OccurrenceSpec:
        """An occurrence's `values`, keyed by the rule's values as they print (4 for 4.0 is
        accepted), and checked to name every value the rule can take."""
        if occ.values is None:
            return occ
        where = f"occurs[{index}] ({occ.file}, {occ.pattern!r}): values"
        if self.range is not None:
            raise ValueError(
                f"{where}: expected `choices` on a rule with derived occurrences (each value "
                f"needs its text), found range {list(self.range)}"
            )
        keyed: dict[str, str] = {}
        for key, text in occ.values.items():
            match = [v for v in self.values_taken() if _same(key, v)]
            if not match:
                raise ValueError(
                    f"{where}: expected keys among the rule's values "
                    f"{[value_text(v) for v in self.values_taken()]}, found {key!r}"
                )
            keyed[value_text(match[0])] = text
        missing = [value_text(v) for v in self.values_taken() if value_text(v) not in keyed]
        if missing:
            raise ValueError(
                f"{where}: expected a text for every value the rule can take, found none for "
                f"{', '.join(missing)}"
            )
        return occ.model_copy(update={"values": keyed})


def _same(key: str, value: int | float | str | bool) -> bool:
    """Whether a `values` key names the rule value `value` (numbers compare as numbers)."""
    if key == value_text(value):
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return float(key) == float(value)
        except ValueError:
            return False
    return False


class OverlayFile(BaseModel):
    """The whole of an overlay.yaml."""

    model_config = ConfigDict(extra="forbid")

    rules: dict[str, OverlayRule] = Field(min_length=1)
    variants: list[str] | None = None
    grading: Literal["clean", "live"] | None = None
    """How the task's final state reaches the graders (overrides what the importer chose)."""


@dataclass(frozen=True)
class Span:
    """Where one occurrence's value sits: [start, end) in the file's text, and the pattern's
    own [pattern_start, pattern_end) (what a withheld episode drops)."""

    rule: str
    file: str
    start: int
    end: int
    pattern_start: int
    pattern_end: int
    withheld: str = ""
    texts: tuple[tuple[str, str], ...] = ()
    """A derived occurrence's text per rule value (as it prints); empty: the value itself."""

    def text_for(self, value: int | float | str | bool) -> str:
        """What this span says when the rule takes `value`.

        Raises:
            TaskSpecError: a derived occurrence names no text for that value.
        """
        shown = value_text(value)
        if not self.texts:
            return shown
        for key, text in self.texts:
            if key == shown:
                return text
        raise TaskSpecError(
            f"{self.file}: the occurrence of rule {self.rule!r} gives no text for the value "
            f"{shown!r} (its `values` name {[k for k, _ in self.texts]})"
        )


def value_text(value: int | float | str | bool) -> str:
    """A value as it appears in text: bools true/false, numbers as Python prints them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def rule_type(value: int | float | str | bool) -> str:
    """The RuleSpec type of an overlay rule, from its original value."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str"


def read_overlay(path: Path) -> OverlayFile:
    """Parse an overlay file.

    Raises:
        TaskSpecError: not YAML, or not an overlay (the field and what was expected).
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TaskSpecError(f"{path}: expected a YAML overlay, found: {exc}") from None
    try:
        return OverlayFile.model_validate(data)
    except pydantic.ValidationError as exc:
        lines = []
        for item in exc.errors():
            loc = ".".join(str(part) for part in item["loc"]) or "(top level)"
            lines.append(f"field '{loc}': {item['msg'].removeprefix('Value error, ')}")
        raise TaskSpecError(f"{path}: " + "\n  ".join(lines)) from None


def rule_fields(name: str, rule: OverlayRule) -> dict[str, Any]:
    """The RuleSpec fields (as task.yaml would write them) of an overlay rule."""
    kind = rule_type(rule.original)
    fields: dict[str, Any] = {
        "type": kind,
        "value": rule.original,
        "contradict": rule.contradict if rule.contradict is not None else rule.choices[0],
        "withhold": rule.withhold,
        "description": rule.description or f"declared by {OVERLAY_FILE}",
        "stated_in": [],
    }
    if rule.range is not None:
        fields["range"] = rule.range
    elif kind != "bool":
        fields["choices"] = [rule.original, *rule.choices]
    if rule.not_evidence:
        fields["not_evidence"] = list(rule.not_evidence)
    return fields


def task_words(
    name: str, rule: OverlayRule, texts: Mapping[str, str], spans: Sequence[Span]
) -> tuple[str, ...]:
    """Spellings of the rule's string values that the task's own texts (`texts`: every text
    file the overlay may name) use outside the rule's occurrences (`spans`), other than the
    values' exact text: the task's words, not the rule ("team planning meeting" in a
    solution's untouched line, for the title `Team Planning Meeting`). The trace audit never
    counts an agent writing one as a leak (termgym._spelling)."""
    mine = [s for s in spans if s.rule == name]
    found: dict[str, None] = {}
    for value in rule.values_taken():
        if not isinstance(value, str):
            continue
        for file, text in texts.items():
            taken = [(s.pattern_start, s.pattern_end) for s in mine if s.file == file]
            for spelled in spellings(value, text):
                inside = any(a <= spelled.start < b for a, b in taken)
                if not inside and spelled.text != value:
                    found.setdefault(spelled.text)
    return tuple(found)


def whole_token(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is a whole token: no letter, digit or '_' glued to it, except
    a unit after a number (`3.5m`, `100kg`, `15MB`: a digit or a decimal part still glues)."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    glued = re.compile(r"[\w]")
    first, last = text[start], text[end - 1]
    if last.isdigit() and after and re.match(r"[^\W\d_]", after):
        after = ""  # a unit
    return not (
        (before and glued.match(before) and glued.match(first))
        or (after and glued.match(after) and glued.match(last))
        or (last.isdigit() and text[end : end + 2][:1] == "." and text[end + 1 : end + 2].isdigit())
    )


def find_spans(name: str, rule: OverlayRule, texts: Mapping[str, str], where: str) -> list[Span]:
    """Resolve a rule's occurrences in `texts` (file -> text) to spans.

    Raises:
        TaskSpecError: a file is missing, a pattern is not found, found more than `count`
            times, or does not hold the original value exactly once.
    """
    spans: list[Span] = []
    for index, occ in enumerate(rule.occurs):
        value = occ.values[value_text(rule.original)] if occ.values else value_text(rule.original)
        at = f"{where}: field 'rules.{name}.occurs[{index}]' ({occ.file}, {occ.pattern!r})"
        if occ.file not in texts:
            raise TaskSpecError(
                f"{at}: expected a text file of the task ({INSTRUCTION!r} or a path such as "
                f"{sorted(texts)[:4]}), found no {occ.file}"
            )
        text = texts[occ.file]
        found = [m.start() for m in re.finditer(re.escape(occ.pattern), text)]
        if len(found) != occ.count:
            raise TaskSpecError(
                f"{at}: expected the pattern {occ.count} time(s) in {occ.file}, found it "
                f"{len(found)} time(s)"
            )
        inner = [
            m.start()
            for m in re.finditer(re.escape(value), occ.pattern)
            if whole_token(occ.pattern, m.start(), m.end())
        ]
        if len(inner) != 1:
            what = "text for the original value" if occ.values else "original value"
            raise TaskSpecError(
                f"{at}: expected the pattern to hold rule {name}'s {what} {value!r} "
                f"once, as a whole token, found it {len(inner)} time(s)"
            )
        for start in found:
            spans.append(
                Span(
                    rule=name,
                    file=occ.file,
                    start=start + inner[0],
                    end=start + inner[0] + len(value),
                    pattern_start=start,
                    pattern_end=start + len(occ.pattern),
                    withheld=occ.withheld,
                    texts=tuple(sorted((occ.values or {}).items())),
                )
            )
    return spans


def check_disjoint(spans: Sequence[Span], where: str) -> None:
    """Raise TaskSpecError when two rules' patterns overlap: a rewrite of one would change
    text the other owns."""
    by_file: dict[str, list[Span]] = {}
    for span in spans:
        by_file.setdefault(span.file, []).append(span)
    for file, mine in by_file.items():
        ordered = sorted(mine, key=lambda s: (s.pattern_start, s.pattern_end))
        for first, second in zip(ordered, ordered[1:], strict=False):
            if second.pattern_start < first.pattern_end:
                raise TaskSpecError(
                    f"{where}: {file}: the patterns of rules {first.rule!r} and "
                    f"{second.rule!r} overlap (characters {second.pattern_start}-"
                    f"{first.pattern_end}): rewriting one would change text the other owns"
                )


def rewrite(
    text: str,
    spans: Sequence[Span],
    values: Mapping[str, Any],
    withheld: frozenset[str] | set[str] = frozenset(),
) -> str:
    """`text` with every span's value replaced by `values[rule]` (a derived span: by its
    text for that value), and the whole pattern of a withheld rule replaced by its
    `withheld` text. Nothing else changes."""
    out = []
    cursor = 0
    for span in sorted(spans, key=lambda s: s.pattern_start):
        if span.rule in withheld:
            out.append(text[cursor : span.pattern_start])
            out.append(span.withheld)
            cursor = span.pattern_end
        else:
            out.append(text[cursor : span.start])
            out.append(span.text_for(values[span.rule]))
            cursor = span.end
    out.append(text[cursor:])
    return "".join(out)
