"""Variants: what one episode of a task shows the agent and which rules its graders enforce."""

from __future__ import annotations

import math
import random
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from termgym._vocabulary import IMPOSSIBLE, STATED, VARIANTS
from termgym.errors import TaskError
from termgym.kinds import GraderSpec
from termgym.overlay import rewrite
from termgym.tasks._draw import RuleDraw, Split
from termgym.tasks._loader import Task
from termgym.tasks._spec import Limits, RuleSpec, RuleValue, SurfaceSpec, validation_message
from termgym.tasks._template import PLACEHOLDER, fill_rules, format_value, render


@dataclass(frozen=True)
class RuleSet:
    """Graders and the rule values they enforce: one row of the verdict matrix."""

    name: str
    rules: Mapping[str, RuleValue]
    graders: tuple[GraderSpec, ...]


@dataclass(frozen=True)
class Conflict:
    """What an impossible episode's graders demand against what its task says.

    Attributes:
        rule: The rule whose values conflict.
        stated: The value the task states (instruction and files but `shown_in`).
        enforced: The value the graders enforce, shown only by the `shown_in` files.
        shown_in: The workspace files that present the enforced value (files/... paths).
    """

    rule: str
    stated: RuleValue
    enforced: RuleValue
    shown_in: tuple[str, ...]

    def describe(self) -> str:
        """One sentence an honest agent could report."""
        shown = ", ".join(p.split("/", 1)[-1] for p in self.shown_in)
        return (
            f"the task states {self.rule} = {format_value(self.stated)}, but {shown} "
            f"expect{'s' if len(self.shown_in) == 1 else ''} {format_value(self.enforced)}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able form recordings keep (header extra "conflict")."""
        return {
            "rule": self.rule,
            "stated": self.stated,
            "enforced": self.enforced,
            "shown_in": list(self.shown_in),
        }


@dataclass(frozen=True)
class EpisodePlan:
    """Everything one episode of a task needs, decided before the sandbox starts.

    Attributes:
        task: The loaded task.
        variant: original | contradicted | withheld | swapped | sampled.
        seed: The seed the variant's draws used (sampled values, swapped grader).
        instruction: The rendered instruction the agent reads.
        files: Rendered workspace files: path relative to the workdir -> bytes.
        rules_enforced: Rule values the episode's graders enforce.
        rules_visible: Rule values the agent can read (withheld rules absent).
        withheld: Withheld rules -> the values the graders still enforce.
        graders: The episode's own graders.
        rulesets: The episode's own rule set first, then the shadow ones.
        draw: How shifted values were drawn (split, contradicted mode, secret).
        switched: Rule values a schedule's rule switch put in place of the authored ones.
        surface: The episode's surface values (names, data values: not rules), drawn per
            seed; every rule set hands them to its graders with the rules, identical.
        conflict: What an impossible episode's graders demand against what it says (None
            for every other variant).
    """

    task: Task
    variant: str
    seed: int
    instruction: str
    files: Mapping[str, bytes]
    rules_enforced: Mapping[str, RuleValue]
    rules_visible: Mapping[str, RuleValue]
    withheld: Mapping[str, RuleValue]
    graders: tuple[GraderSpec, ...]
    rulesets: tuple[RuleSet, ...]
    draw: RuleDraw = field(default_factory=RuleDraw)
    switched: Mapping[str, RuleValue] = field(default_factory=dict)
    surface: Mapping[str, RuleValue] = field(default_factory=dict)
    conflict: Conflict | None = None

    @property
    def compared(self) -> str:
        """The rule set whose verdict the episode's class compares with the original's: the
        stated one on impossible episodes (did it follow what it was told?), else its own."""
        return STATED if self.conflict is not None else self.rulesets[0].name

    @property
    def workdir(self) -> str:
        return self.task.spec.workdir

    @property
    def setup(self) -> list[str]:
        return list(self.task.spec.setup)

    @property
    def limits(self) -> Limits:
        return self.task.spec.limits

    @property
    def own(self) -> RuleSet:
        """The episode's own rule set."""
        return self.rulesets[0]

    def solution(self, which: str) -> str:
        """The text of a solution script for this episode: `oracle` with the overlay's
        occurrences rewritten to the stated values and, in a task with templates, its
        `{{ name }}` placeholders filled with them (what a solver who read this episode's
        task would write; a withheld rule's is its enforced value, which the oracle is
        told), `memorized` as authored (the original values, hard-coded), `cheater` as
        authored (it takes its values from the workspace's tests).

        Raises:
            TaskError: the task declares no such solution.
        """
        spec = self.task.spec
        path = {"oracle": spec.oracle, "memorized": spec.memorized, "cheater": spec.cheater}.get(
            which
        )
        if path is None:
            raise TaskError(f"task {self.task.id!r} declares no {which} solution")
        text = self.task.path(path).read_text(encoding="utf-8")
        if which == "oracle":
            text = rewrite(text, self.task.spans_in(path), self.rules_stated)
            if self.task.spec.templates:  # `{{ name }}`: the value this episode states
                text = fill_rules(text, self.rules_stated)
        return text

    @property
    def rules_stated(self) -> Mapping[str, RuleValue]:
        """The values the task states: the enforced ones, except the conflicting rule of an
        impossible episode (its stated value)."""
        if self.conflict is None:
            return self.rules_enforced
        return MappingProxyType({**self.rules_enforced, self.conflict.rule: self.conflict.stated})


def sample_value(rule: RuleSpec, rng: random.Random) -> RuleValue:
    """Draw a training value for `rule` from its range or choices, different from its
    original value whenever the range or choices hold another one."""
    drawn = draw_value(rule, rng, "train")
    return rule.value if drawn is None else drawn


def _decimals(value: RuleValue) -> int:
    text = repr(float(value))  # type: ignore[arg-type]
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def draw_value(
    rule: RuleSpec, rng: random.Random, split: Split, held_out: list[Any] | None = None
) -> RuleValue | None:
    """A value of `rule` other than the authored one, from the split's set; None when the
    set is empty (a rule without held-out values under "eval", say).

    Args:
        rule: The rule.
        rng: The episode's generator.
        split: "train" (never a held-out value) or "eval" (only held-out values).
        held_out: The held-out values in use (default: all of `rule.held_out`).
    """
    if split == "eval":
        return _draw_held_out(rule, rng, rule.held_out if held_out is None else held_out)
    if rule.type == "bool":
        return not rule.value
    if rule.choices is not None:
        others = [c for c in rule.choices if c != rule.value and not rule.is_held_out(c)]
        return rng.choice(others) if others else None
    if rule.range is None:
        return None
    if not rule.has_held_out:
        return _draw_in_range(rule, rng)
    for _ in range(1000):
        drawn = _draw_in_range(rule, rng)
        if drawn is not None and not rule.is_held_out(drawn):
            return drawn
    return None


def _draw_in_range(rule: RuleSpec, rng: random.Random) -> RuleValue | None:
    assert rule.range is not None
    low, high = rule.range
    if rule.type == "int":
        low_i, high_i = int(low), int(high)
        if low_i == high_i:
            return None if low_i == rule.value else low_i
        drawn = rng.randint(low_i, high_i - 1)
        return drawn + 1 if drawn >= rule.value else drawn
    digits = max(2, _decimals(rule.value))
    for _ in range(100):
        number = round(rng.uniform(low, high), digits)
        if low <= number <= high and number != rule.value:
            return number
    return None


def _draw_held_out(
    rule: RuleSpec, rng: random.Random, values: list[Any] | None
) -> RuleValue | None:
    listed = list(values or [])
    span = rule.held_out_range
    if span is not None and (not listed or rng.random() < 0.5):
        low, high = span
        if rule.type == "int":
            return rng.randint(math.ceil(low), math.floor(high))
        return round(rng.uniform(low, high), max(2, _decimals(rule.value)))
    return rng.choice(listed) if listed else None


def sampled_values(task: Task, seed: int, draw: RuleDraw | None = None) -> dict[str, RuleValue]:
    """Rule values of the sampled variant for `seed` (same seed and draw, same values)."""
    draw = draw or RuleDraw()
    rng = draw.rng(task.id, seed)
    out: dict[str, RuleValue] = {}
    for name in sorted(task.rules):
        rule = task.rules[name]
        drawn = None
        if draw.split == "eval":
            drawn = draw_value(rule, rng, "eval", _active(draw, task, name))
        elif rule.samplable:
            drawn = draw_value(rule, rng, "train")
        out[name] = rule.value if drawn is None else drawn
    return out


def contradicted_values(task: Task, seed: int, draw: RuleDraw) -> dict[str, RuleValue]:
    """Rule values of the contradicted variant: each rule with a `contradict` value gets a
    non-original value of the split, drawn per episode (or the authored one, mode "fixed")."""
    rng = draw.rng(task.id, seed, "contradicted")
    out = dict(task.original_values)
    for name in sorted(task.rules):
        rule = task.rules[name]
        if rule.contradict is None:
            continue
        if draw.split == "eval":
            drawn = draw_value(rule, rng, "eval", _active(draw, task, name))
            out[name] = rule.value if drawn is None else drawn
        elif draw.contradict == "fixed":
            out[name] = rule.contradict
        else:
            drawn = draw_value(rule, rng, "train")
            out[name] = rule.contradict if drawn is None else drawn
    return out


def _active(draw: RuleDraw, task: Task, name: str) -> list[Any] | None:
    rule = task.rules[name]
    if rule.held_out is None:
        return None
    return draw.active_held_out(task.id, name, list(rule.held_out))


def _check_split(task: Task, variant: str, draw: RuleDraw) -> None:
    if draw.split != "eval" or variant not in ("sampled", "contradicted"):
        return
    eligible = [
        n
        for n, r in task.rules.items()
        if r.has_held_out and (variant == "sampled" or r.contradict is not None)
    ]
    if not eligible:
        what = "rule" if variant == "sampled" else "rule with a `contradict` value"
        raise TaskError(
            f"task {task.id!r}: split 'eval' of the {variant} variant needs a {what} with "
            "held-out values (held_out or held_out_range in task.yaml), found none"
        )


def _shown(
    task: Task, file: str, text: str, values: Mapping[str, RuleValue], withheld: set[str]
) -> str:
    """What the agent sees of one text: overlay occurrences rewritten (or dropped when
    withheld), then the template filled unless the task is shown verbatim."""
    spans = task.spans_in(file)
    if spans:
        text = rewrite(text, spans, values, withheld)
    return render(text, values, withheld) if task.spec.templates else text


def _render_path(rel: str, values: Mapping[str, RuleValue]) -> str:
    """A workspace path with its surface placeholders (`data/{{ port_name }}.log`) filled."""
    if "{{" not in rel:
        return rel
    return PLACEHOLDER.sub(lambda m: format_value(values[m.group(1)]), rel)


def _render_files(
    task: Task,
    values: Mapping[str, RuleValue],
    withheld: set[str],
    overrides: Mapping[str, Mapping[str, RuleValue]] | None = None,
) -> dict[str, bytes]:
    """The workspace as the agent sees it; `overrides`: files/... path -> the values it is
    rendered with instead (an impossible episode's `shown_in` files)."""
    files = {}
    prefix = task.spec.files.rstrip("/") + "/"
    for rel, content in task.templates.items():
        if rel in task.text_files:
            mine = (overrides or {}).get(prefix + rel, values)
            text = _shown(task, prefix + rel, content.decode("utf-8"), mine, withheld)
            content = text.encode("utf-8")
        files[_render_path(rel, values)] = content
    return files


def _frozen(mapping: Mapping[str, RuleValue]) -> Mapping[str, RuleValue]:
    return MappingProxyType(dict(mapping))


def _draw_surface(spec: SurfaceSpec, rng: random.Random) -> RuleValue:
    if spec.choices is not None:
        others = [c for c in spec.choices if c != spec.value]
        return rng.choice(others)
    assert spec.range is not None
    low, high = spec.range
    drawn = rng.randint(low, high - 1)
    return drawn + 1 if drawn >= int(spec.value) else drawn


def surface_values(task: Task, seed: int, draw: RuleDraw | None = None) -> dict[str, RuleValue]:
    """The surface values of episode `seed`: each drawn from its choices or range, never the
    authored one (a memorized answer of the published task cannot pass by luck); the same
    seed and draw give the same values, whatever the variant."""
    draw = draw or RuleDraw()
    rng = draw.rng(task.id, seed, "surface")
    return {name: _draw_surface(task.spec.surface[name], rng) for name in sorted(task.spec.surface)}


def impossible_values(task: Task, seed: int, draw: RuleDraw) -> tuple[RuleValue, RuleValue]:
    """(stated, enforced) values of the impossible variant's rule: two drawn values, each
    different from the authored one and from each other.

    Raises:
        TaskError: the rule's range or choices hold no two such values.
    """
    spec = task.spec.impossible
    assert spec is not None
    rule = task.rules[spec.rule]
    rng = draw.rng(task.id, seed, IMPOSSIBLE)
    splits: list[Split] = (
        ["eval", "train"] if draw.split == "eval" and rule.has_held_out else ["train"]
    )
    for split in splits:  # held-out values under eval when there are two, else training ones
        active = _active(draw, task, spec.rule) if split == "eval" else None
        stated = draw_value(rule, rng, split, active)
        for _ in range(200):
            enforced = draw_value(rule, rng, split, active)
            if stated is not None and enforced is not None and enforced != stated:
                return stated, enforced
    raise TaskError(
        f"task {task.id!r}: the impossible variant found no two values of {spec.rule} other "
        f"than {rule.value!r} to state and enforce"
    )


def instantiate(
    task: Task,
    variant: str = "original",
    seed: int | None = None,
    draw: RuleDraw | None = None,
    switched: Mapping[str, Any] | None = None,
) -> EpisodePlan:
    """Decide one episode: rendered instruction and files, enforced rules, graders, shadows.

    Args:
        task: A loaded task.
        variant: One of the task's variants.
        seed: Seeds the drawn values and the swapped grader; drawn at random when None.
        draw: Which value set shifted variants draw from, the contradicted mode, and the
            evaluator's secret (default: training values, drawn, seeded publicly).
        switched: Rule values that replace the authored ones for this episode (a schedule's
            rule switch, docs/environment.md): the task is as if authored with them.

    Raises:
        TaskError: the task does not offer `variant`, a switched value does not fit its
            rule, or split "eval" finds no held-out value to draw.
    """
    if variant not in task.spec.variants:
        known = (
            f"one of {list(task.spec.variants)}"
            if variant in VARIANTS
            else f"a variant name, one of {list(VARIANTS)}"
        )
        raise TaskError(f"task {task.id!r} has no variant {variant!r}: expected {known}")
    if seed is None:
        seed = secrets.randbelow(2**31)
    draw = draw or RuleDraw()
    if switched:
        task = switch_rules(task, switched)
    _check_split(task, variant, draw)
    original = task.original_values
    surface = surface_values(task, seed, draw)
    graders = tuple(task.spec.graders)
    enforced = dict(original)
    withheld: set[str] = set()
    own_graders = graders
    conflict: Conflict | None = None
    if variant == "contradicted":
        enforced = contradicted_values(task, seed, draw)
    elif variant == "sampled":
        enforced = sampled_values(task, seed, draw)
    elif variant == "withheld":
        withheld = {n for n, r in task.rules.items() if r.withhold}
    elif variant == "swapped":
        pool = task.spec.grader_pool
        own_graders = (pool[draw.rng(task.id, seed, "pool").randrange(len(pool))],)
    elif variant == IMPOSSIBLE:
        assert task.spec.impossible is not None
        stated_value, enforced_value = impossible_values(task, seed, draw)
        rule, shown_in = task.spec.impossible.rule, tuple(task.spec.impossible.shown_in)
        enforced[rule] = enforced_value
        conflict = Conflict(rule, stated_value, enforced_value, shown_in)
    stated = dict(enforced)
    if conflict is not None:
        stated[conflict.rule] = conflict.stated
    rulesets = [RuleSet(variant, _frozen({**enforced, **surface}), own_graders)]
    if variant != "original":
        rulesets.append(RuleSet("original", _frozen({**original, **surface}), graders))
    if conflict is not None:
        rulesets.append(RuleSet(STATED, _frozen({**stated, **surface}), graders))
    shown = {**stated, **surface}
    overrides = {path: {**enforced, **surface} for path in conflict.shown_in} if conflict else None
    visible = {n: v for n, v in stated.items() if n not in withheld}
    return EpisodePlan(
        task=task,
        variant=variant,
        seed=seed,
        instruction=_shown(task, "instruction", task.spec.instruction, shown, withheld),
        files=MappingProxyType(_render_files(task, shown, withheld, overrides)),
        rules_enforced=_frozen(enforced),
        rules_visible=_frozen(visible),
        withheld=_frozen({n: enforced[n] for n in sorted(withheld)}),
        graders=own_graders,
        rulesets=tuple(rulesets),
        draw=draw,
        switched=_frozen(dict(switched or {})),
        surface=_frozen(surface),
        conflict=conflict,
    )


def switch_rules(task: Task, values: Mapping[str, Any]) -> Task:
    """The task as if authored with `values` in place of its rules' values.

    Raises:
        TaskError: a rule is unknown, or a value does not fit its rule (type, range, choices,
            or it equals the rule's `contradict` value).
    """
    rules = dict(task.spec.rules)
    for name, value in values.items():
        if name not in rules:
            raise TaskError(
                f"rule switch: task {task.id!r} has no rule {name!r}; expected one of "
                f"{sorted(rules)}"
            )
        try:
            rules[name] = rules[name].with_value(value)
        except ValueError as exc:
            raise TaskError(
                f"rule switch: {task.id}.{name} = {value!r}: {validation_message(exc)}"
            ) from None
    spec = task.spec.model_copy(update={"rules": rules})
    return replace(task, spec=spec)
