"""Variants: what one episode of a task shows the agent and which rules its graders enforce."""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from termgym._vocabulary import VARIANTS
from termgym.errors import TaskError
from termgym.kinds import GraderSpec
from termgym.tasks._loader import Task
from termgym.tasks._overlay import rewrite
from termgym.tasks._spec import Limits, RuleSpec, RuleValue
from termgym.tasks._template import render


@dataclass(frozen=True)
class RuleSet:
    """Graders and the rule values they enforce: one row of the verdict matrix."""

    name: str
    rules: Mapping[str, RuleValue]
    graders: tuple[GraderSpec, ...]


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
        occurrences rewritten to the enforced values (what a solver who read this episode's
        task would write), `memorized` as authored (the original values, hard-coded).

        Raises:
            TaskError: the task declares no such solution.
        """
        spec = self.task.spec
        path = spec.oracle if which == "oracle" else spec.memorized
        if which not in ("oracle", "memorized") or path is None:
            raise TaskError(f"task {self.task.id!r} declares no {which} solution")
        text = self.task.path(path).read_text(encoding="utf-8")
        if which == "oracle":
            text = rewrite(text, self.task.spans_in(path), self.rules_enforced)
        return text


def sample_value(rule: RuleSpec, rng: random.Random) -> RuleValue:
    """Draw a value for `rule` from its range or choices, different from its original value
    whenever the range or choices hold another one."""
    if rule.type == "bool":
        return not rule.value
    if rule.choices is not None:
        others = [c for c in rule.choices if c != rule.value]
        return rng.choice(others) if others else rule.value
    if rule.range is None:
        return rule.value
    low, high = rule.range
    if rule.type == "int":
        low_i, high_i = int(low), int(high)
        if low_i == high_i:
            return low_i
        drawn = rng.randint(low_i, high_i - 1)
        return drawn + 1 if drawn >= rule.value else drawn
    digits = max(2, _decimals(rule.value))
    for _ in range(100):
        number = round(rng.uniform(low, high), digits)
        if low <= number <= high and number != rule.value:
            return number
    return rule.value


def _decimals(value: RuleValue) -> int:
    text = repr(float(value))  # type: ignore[arg-type]
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def sampled_values(task: Task, seed: int) -> dict[str, RuleValue]:
    """Rule values of the sampled variant for `seed` (same seed, same values)."""
    rng = random.Random(f"termgym:{task.id}:{seed}")
    return {
        name: sample_value(task.rules[name], rng)
        if task.rules[name].samplable
        else task.rules[name].value
        for name in sorted(task.rules)
    }


def _shown(
    task: Task, file: str, text: str, values: Mapping[str, RuleValue], withheld: set[str]
) -> str:
    """What the agent sees of one text: overlay occurrences rewritten (or dropped when
    withheld), then the template filled unless the task is shown verbatim."""
    spans = task.spans_in(file)
    if spans:
        text = rewrite(text, spans, values, withheld)
    return render(text, values, withheld) if task.spec.templates else text


def _render_files(
    task: Task, values: Mapping[str, RuleValue], withheld: set[str]
) -> dict[str, bytes]:
    files = {}
    prefix = task.spec.files.rstrip("/") + "/"
    for rel, content in task.templates.items():
        if rel in task.text_files:
            text = _shown(task, prefix + rel, content.decode("utf-8"), values, withheld)
            content = text.encode("utf-8")
        files[rel] = content
    return files


def _frozen(mapping: Mapping[str, RuleValue]) -> Mapping[str, RuleValue]:
    return MappingProxyType(dict(mapping))


def instantiate(task: Task, variant: str = "original", seed: int | None = None) -> EpisodePlan:
    """Decide one episode: rendered instruction and files, enforced rules, graders, shadows.

    Args:
        task: A loaded task.
        variant: One of the task's variants.
        seed: Seeds the sampled values and the swapped grader; drawn at random when None.

    Raises:
        TaskError: the task does not offer `variant`.
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
    original = task.original_values
    graders = tuple(task.spec.graders)
    enforced = dict(original)
    withheld: set[str] = set()
    own_graders = graders
    if variant == "contradicted":
        enforced.update(
            {n: r.contradict for n, r in task.rules.items() if r.contradict is not None}
        )
    elif variant == "sampled":
        enforced = sampled_values(task, seed)
    elif variant == "withheld":
        withheld = {n for n, r in task.rules.items() if r.withhold}
    elif variant == "swapped":
        pool = task.spec.grader_pool
        own_graders = (pool[random.Random(f"termgym:{task.id}:{seed}:pool").randrange(len(pool))],)
    rulesets = [RuleSet(variant, _frozen(enforced), own_graders)]
    if variant != "original":
        rulesets.append(RuleSet("original", _frozen(original), graders))
    visible = {n: v for n, v in enforced.items() if n not in withheld}
    return EpisodePlan(
        task=task,
        variant=variant,
        seed=seed,
        instruction=_shown(task, "instruction", task.spec.instruction, enforced, withheld),
        files=MappingProxyType(_render_files(task, enforced, withheld)),
        rules_enforced=_frozen(enforced),
        rules_visible=_frozen(visible),
        withheld=_frozen({n: enforced[n] for n in sorted(withheld)}),
        graders=own_graders,
        rulesets=tuple(rulesets),
    )
