"""Pydantic models of task.yaml: what a task author writes, checked field by field."""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from termgym._vocabulary import Variant
from termgym.kinds import GraderSpec

RuleType = Literal["int", "float", "str", "bool", "choice"]
VariantName = Variant
RuleValue = int | float | str | bool


def _type_name(value: object) -> str:
    return type(value).__name__


def _check_type(kind: str, value: object, what: str) -> RuleValue:
    """Return `value` if it fits rule type `kind`, else raise ValueError naming `what`."""
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{what}: expected a bool (true/false), found {value!r}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{what}: expected an int, found {_type_name(value)} {value!r}")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{what}: expected a number, found {_type_name(value)} {value!r}")
        if not math.isfinite(float(value)):
            raise ValueError(f"{what}: expected a finite number, found {value!r}")
        return float(value)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{what}: expected a string, found {_type_name(value)} {value!r}")
    return value if isinstance(value, str) else str(value)


class RuleSpec(BaseModel):
    """One named, typed parameter the hidden graders enforce."""

    model_config = ConfigDict(extra="forbid")

    type: RuleType
    value: Any
    range: tuple[float, float] | None = None
    choices: list[Any] | None = None
    contradict: Any = None
    held_out: list[Any] | None = None
    held_out_range: tuple[float, float] | None = None
    stated_in: list[str] = Field(default_factory=list)
    withhold: bool = True
    description: str = ""
    overlay: bool = False
    """Declared by the task's overlay.yaml: stated by literal occurrences, not placeholders."""
    not_evidence: list[str] = Field(default_factory=list)
    """Workspace files (globs relative to the workdir) whose occurrences of the rule's values
    are data, not the rule (an amount of 250.00 in a CSV of a task whose limit is 250): they
    do not show the agent the rule, to the trace audit nor to `termgym check`'s proof that
    a withheld value is seen nowhere (docs/task-format.md, "The withheld check")."""

    @field_validator("not_evidence")
    @classmethod
    def _workdir_globs(cls, globs: list[str]) -> list[str]:
        for glob in globs:
            if not glob or glob.startswith("/") or ".." in glob.split("/"):
                raise ValueError(
                    f"expected globs relative to the workdir (data/claims.csv, logs/*.log), "
                    f"found {glob!r}"
                )
        return globs

    @model_validator(mode="after")
    def _consistent(self) -> RuleSpec:
        self.value = _check_type(self.type, self.value, "value")
        if self.range is not None:
            if self.type not in ("int", "float"):
                raise ValueError(
                    f"range: only int and float rules take a range, this rule is "
                    f"{self.type}; use choices"
                )
            low, high = self.range
            if low > high:
                raise ValueError(
                    f"range: expected [low, high] with low <= high, found {low} > {high}"
                )
            if self.type == "int" and (low != int(low) or high != int(high)):
                raise ValueError(
                    f"range: expected int bounds for an int rule, found {list(self.range)}"
                )
        if self.choices is not None:
            if self.type == "bool":
                raise ValueError("choices: a bool rule takes no choices (sampled flips it)")
            if self.range is not None:
                raise ValueError("choices, range: expected one of them, found both")
            self.choices = [_check_type(self.type, c, "choices") for c in self.choices]
            if len(self.choices) < 1:
                raise ValueError("choices: expected at least one choice, found an empty list")
        elif self.type == "choice":
            raise ValueError("choices: a choice rule needs a list of choices, found none")
        self._within(self.value, "value")
        if self.contradict is not None:
            self.contradict = _check_type(self.type, self.contradict, "contradict")
            if self.contradict == self.value:
                raise ValueError(
                    f"contradict: expected a value different from value "
                    f"{self.value!r}, found the same {self.contradict!r}"
                )
            self._within(self.contradict, "contradict")
        self._held_out_consistent()
        return self

    def _held_out_consistent(self) -> None:
        """held_out: values of the rule kept for evaluation; held_out_range: a sub-range."""
        if self.held_out is not None:
            if self.type == "bool":
                raise ValueError("held_out: a bool rule has no value to hold out")
            if not self.held_out:
                raise ValueError("held_out: expected at least one value, found an empty list")
            self.held_out = [_check_type(self.type, v, "held_out") for v in self.held_out]
            for value in self.held_out:
                self._within(value, "held_out")
            if self.value in self.held_out:
                raise ValueError(
                    f"held_out: expected values other than the authored value "
                    f"{self.value!r}, found it among them"
                )
        if self.held_out_range is not None:
            if self.range is None:
                raise ValueError("held_out_range: only a rule with a range takes one")
            low, high = self.held_out_range
            if low > high or low < self.range[0] or high > self.range[1]:
                raise ValueError(
                    f"held_out_range: expected [low, high] within range "
                    f"[{_num(self.range[0])}, {_num(self.range[1])}], found "
                    f"[{_num(low)}, {_num(high)}]"
                )
            if low <= float(self.value) <= high:
                raise ValueError(
                    f"held_out_range: expected a sub-range without the authored value "
                    f"{self.value!r}, found [{_num(low)}, {_num(high)}]"
                )
        if self.contradict is not None and self.is_held_out(self.contradict):
            raise ValueError(
                f"contradict: expected a training value, found the held-out value "
                f"{self.contradict!r}"
            )

    def is_held_out(self, value: RuleValue) -> bool:
        """Whether `value` is one of the rule's held-out values."""
        if self.held_out is not None and value in self.held_out:
            return True
        if self.held_out_range is not None and not isinstance(value, bool | str):
            return self.held_out_range[0] <= float(value) <= self.held_out_range[1]
        return False

    def with_value(self, value: Any) -> RuleSpec:
        """This rule as if authored with `value` (a `contradict` equal to it becomes the old
        value). Raises pydantic's ValueError when `value` does not fit the rule."""
        data = self.model_dump()
        data["value"] = value
        if data.get("contradict") == value:
            data["contradict"] = self.value
        return type(self).model_validate(data)

    @property
    def has_held_out(self) -> bool:
        """Whether any value of the rule is kept for evaluation."""
        return self.held_out is not None or self.held_out_range is not None

    def _within(self, value: RuleValue, what: str) -> None:
        if self.range is not None:
            low, high = self.range
            if not low <= float(value) <= high:  # type: ignore[arg-type]
                raise ValueError(
                    f"{what}: expected a value within range [{_num(low)}, "
                    f"{_num(high)}], found {value!r}"
                )
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{what}: expected one of {self.choices}, found {value!r}")

    @property
    def samplable(self) -> bool:
        """Whether the sampled variant can draw a value other than `value` for this rule."""
        if self.type == "bool":
            return True
        if self.range is not None:
            return self.range[0] != self.range[1]
        return self.choices is not None and len(set(map(str, self.choices))) > 1


def validation_message(exc: ValueError) -> str:
    """The messages of a pydantic ValidationError without its boilerplate."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    return "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in errors())


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


class Limits(BaseModel):
    """Time, step, network, memory and disk limits of an episode."""

    model_config = ConfigDict(extra="forbid")

    agent_timeout: float = Field(default=600, gt=0)
    grading_timeout: float = Field(default=60, gt=0)
    max_steps: int = Field(default=50, gt=0)
    network: bool = False
    memory_mb: int = Field(default=1024, gt=0)
    cpus: float = Field(default=1.0, gt=0)
    """CPU cores the sandbox may use (fractional; at most the host's, as docker allows)."""
    disk_mb: int = Field(default=1024, ge=16)
    work_files: int = Field(default=100_000, gt=0)
    """Files, folders and links the agent's work (the workdir and `grading.state`) may hold
    when it is copied to the graders; past it, the episode is a grader-error."""
    work_depth: int = Field(default=128, gt=0, le=512)
    """Folders deep the agent's work may go (`/app/a/b` is 3), as `work_files`."""
    work_copy_timeout: float = Field(default=120, gt=0)
    """Seconds copying the agent's work out of its sandbox (and into each verifier) may
    take, as `work_files`."""
    capabilities: Literal["none", "default"] = "none"
    """What the agent's root may do: "none" (every capability dropped) or "default"
    (Docker's default set, as Terminal-Bench and Harbor run tasks: apt-get, pip, chown ...
    work; on bwrap within the sandbox's user namespace only)."""


class GradingSpec(BaseModel):
    """How the final state reaches the hidden graders (docs/task-format.md, docs/security.md).

    mode "clean" (the default): the agent's sandbox is stopped, and the workdir plus the
    `state` paths are copied into a fresh sandbox of the task's clean image, where the
    graders run. Mode "live": the agent's processes keep running while the graders run in
    that fresh sandbox, which shares the agent sandbox's network (a service the agent left
    running answers on localhost); files still arrive only by copy.
    """

    model_config = ConfigDict(extra="forbid")

    mode: Literal["clean", "live"] = "clean"
    state: list[str] = Field(default_factory=list)
    python: str = "/usr/bin/python3"
    filesystem: Literal["work", "snapshot"] = "work"
    """What the graders see of the agent's machine: "work" (the clean image plus the workdir
    and `state` paths) or "snapshot" (the agent's whole final filesystem, as its harness
    runs the tests: what it installed is there; imported tasks use it; docs/security.md,
    "Snapshot grading")."""

    @field_validator("state")
    @classmethod
    def _absolute_paths(cls, paths: list[str]) -> list[str]:
        for path in paths:
            if not path.startswith("/") or path.rstrip("/") == "" or ".." in path.split("/"):
                raise ValueError(f"expected absolute paths below / without '..', found {path!r}")
        return [p.rstrip("/") for p in paths]

    @field_validator("python")
    @classmethod
    def _absolute_python(cls, python: str) -> str:
        if not python.startswith("/"):
            raise ValueError(
                f"expected the absolute path of the clean image's interpreter, found {python!r}"
            )
        return python


class Provenance(BaseModel):
    """Where an imported task came from (`termgym import`, docs/importing.md)."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["terminal-bench", "harbor"]
    original_id: str
    source: str = ""
    author: str = ""
    difficulty: str = ""
    category: str = ""
    tags: list[str] = Field(default_factory=list)
    base_image: str = ""
    image_mapping: str = ""
    approximate: list[str] = Field(default_factory=list)
    """Why the import is not exactly the original's semantics (empty: faithful)."""
    protection: Literal["clean", "agent-user"] = "clean"
    """clean: the test script runs only recognized steps as root, every program the tests
    start runs as the agent's user; agent-user: the whole test script runs as the agent's
    user (it runs programs of the agent's work itself), see docs/importing.md."""


class SurfaceSpec(BaseModel):
    """A part of what the task shows that is not a rule: a name or a data value drawn per
    episode (docs/task-format.md, "Surface randomization"), so that a memorized answer fails
    where a memorized rule would."""

    model_config = ConfigDict(extra="forbid")

    value: str | int
    choices: list[str | int] | None = None
    range: tuple[int, int] | None = None
    description: str = ""

    @model_validator(mode="after")
    def _one_source(self) -> SurfaceSpec:
        if (self.choices is None) == (self.range is None):
            found = "both" if self.choices is not None else "neither"
            raise ValueError(f"expected either choices or range, found {found}")
        if self.choices is not None:
            if len(set(map(str, self.choices))) < 2:
                raise ValueError(f"choices: expected at least two values, found {self.choices}")
            if self.value not in self.choices:
                raise ValueError(f"value: expected one of the choices, found {self.value!r}")
            kinds = {type(c) for c in [self.value, *self.choices]}
            if len(kinds) > 1:
                raise ValueError("choices: expected values of one type (all text or all ints)")
        if self.range is not None:
            low, high = self.range
            if not low < high:
                raise ValueError(f"range: expected low < high, found [{low}, {high}]")
            if isinstance(self.value, str) or not low <= self.value <= high:
                raise ValueError(
                    f"value: expected an int within range [{low}, {high}], found {self.value!r}"
                )
        return self


class ImpossibleSpec(BaseModel):
    """How the impossible variant makes the hidden graders demand what the task does not say.

    `rule`: the rule whose stated and enforced values conflict: the task states a value
    drawn per episode and the graders enforce another one, which only the `shown_in` files
    (the task's own tests or examples, in the workspace) present.
    """

    model_config = ConfigDict(extra="forbid")

    rule: str
    shown_in: list[str] = Field(min_length=1)


class TaskSpec(BaseModel):
    """The whole of a task.yaml."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    version: int = Field(default=1, ge=1)
    title: str
    category: str = "general"
    instruction: str
    image: str | None = None
    dockerfile: str | None = None
    workdir: str = "/app"
    files: str = "files"
    templates: bool = True
    raw_files: list[str] = Field(default_factory=list)
    setup: list[str] = Field(default_factory=list)
    rules: dict[str, RuleSpec] = Field(default_factory=dict)
    variants: list[VariantName] = Field(default_factory=lambda: list[VariantName](["original"]))
    graders: list[GraderSpec] = Field(min_length=1)
    grader_pool: list[GraderSpec] = Field(default_factory=list)
    oracle: str = "solution/oracle.sh"
    memorized: str | None = None
    cheater: str | None = None
    """A solution that makes the workspace's tests pass by any means (docs/agents.md)."""
    impossible: ImpossibleSpec | None = None
    surface: dict[str, SurfaceSpec] = Field(default_factory=dict)
    protected: list[str] = Field(default_factory=list)
    """Workspace files (globs relative to the workdir) the agent has no business changing:
    the task's own tests and the files that state its rules; a change is tamper evidence."""
    limits: Limits = Field(default_factory=Limits)
    grading: GradingSpec = Field(default_factory=GradingSpec)
    provenance: Provenance | None = None

    @field_validator("rules")
    @classmethod
    def _rule_names(cls, rules: dict[str, RuleSpec]) -> dict[str, RuleSpec]:
        for name in rules:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(
                    f"rule name {name!r}: expected an identifier "
                    "(letters, digits, '_', not starting with a digit)"
                )
        return rules

    @field_validator("surface")
    @classmethod
    def _surface_names(cls, surface: dict[str, SurfaceSpec]) -> dict[str, SurfaceSpec]:
        for name in surface:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(
                    f"surface name {name!r}: expected an identifier "
                    "(letters, digits, '_', not starting with a digit)"
                )
        return surface

    @field_validator("workdir")
    @classmethod
    def _absolute(cls, workdir: str) -> str:
        if not workdir.startswith("/"):
            raise ValueError(f"expected an absolute path, found {workdir!r}")
        return workdir.rstrip("/") or "/"

    @model_validator(mode="after")
    def _whole(self) -> TaskSpec:
        if self.image and self.dockerfile:
            raise ValueError("image, dockerfile: expected one of them, found both")
        if "original" not in self.variants:
            raise ValueError(f"variants: expected 'original' among them, found {self.variants}")
        names = [g.name for g in (*self.graders, *self.grader_pool)]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"graders: expected unique grader names, found {dupes} twice")
        if "contradicted" in self.variants and not any(
            r.contradict is not None for r in self.rules.values()
        ):
            raise ValueError(
                "variants: 'contradicted' needs at least one rule with a "
                "`contradict` value, found none"
            )
        if "withheld" in self.variants and not any(r.withhold for r in self.rules.values()):
            raise ValueError(
                "variants: 'withheld' needs at least one rule that can be withheld, found none"
            )
        if "swapped" in self.variants and not self.grader_pool:
            raise ValueError("variants: 'swapped' needs a non-empty grader_pool, found none")
        if "sampled" in self.variants and not any(r.samplable for r in self.rules.values()):
            raise ValueError(
                "variants: 'sampled' needs a rule with a range or several choices, found none"
            )
        clash = sorted(set(self.surface) & set(self.rules))
        if clash:
            raise ValueError(f"surface: expected names that are not rules, found {clash}")
        self._impossible_consistent()
        return self

    def _impossible_consistent(self) -> None:
        offered = "impossible" in self.variants
        if offered and self.impossible is None:
            raise ValueError(
                "variants: 'impossible' needs an `impossible:` section (the rule whose stated "
                "and enforced values conflict, and the files that show the enforced one)"
            )
        if self.impossible is None:
            return
        if not offered:
            raise ValueError("impossible: declared, but 'impossible' is not among the variants")
        rule = self.rules.get(self.impossible.rule)
        if rule is None:
            raise ValueError(
                f"impossible.rule: expected one of the rules {sorted(self.rules)}, found "
                f"{self.impossible.rule!r}"
            )
        if rule.type == "bool" or not rule.samplable:
            raise ValueError(
                f"impossible.rule: {self.impossible.rule} needs a range or choices holding two "
                "values besides the authored one (a stated and an enforced value, neither the "
                "original)"
            )
        if rule.choices is not None and len({str(c) for c in rule.choices} - {str(rule.value)}) < 2:
            raise ValueError(
                f"impossible.rule: {self.impossible.rule} needs at least two choices besides "
                f"the authored {rule.value!r}, found {rule.choices}"
            )
        if rule.type == "int" and rule.range is not None and rule.range[1] - rule.range[0] < 2:
            raise ValueError(
                f"impossible.rule: {self.impossible.rule} needs a range holding two values "
                f"besides the authored {rule.value!r}, found {list(rule.range)}"
            )
