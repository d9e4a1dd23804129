"""Variant schedules: which variant each episode runs, drawn inside the environment.

Gymnasium's autoreset calls `reset()` with no options, so a per-episode mix of variants
cannot come from the caller: it lives here, in the environment, drawn with its generator.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from termgym._vocabulary import VARIANTS, did_you_mean
from termgym.tasks import SPLITS, validation_message

FORMS = (
    "a variant name, a {variant: weight} mix or a list of stages "
    "[{'episodes': N, 'mix': {...}}, ..., {'mix': {...}}]"
)


STAGE_KEYS = ("mix", "episodes", "steps", "split", "rules")


@dataclass(frozen=True)
class Stage:
    """A mix of variants used for `episodes` episodes or until `steps` environment steps
    have been taken (neither: for the rest of training).

    Attributes:
        mix: (variant, weight) pairs.
        episodes: Episodes the stage lasts.
        steps: Environment steps (counted from the start of training) the stage lasts until.
        split: "train" or "eval": which values shifted variants draw (None: the env's own).
        rules: Rule values that replace the authored ones while the stage lasts: a rule
            switch (the graders enforce them, the task states them).
    """

    mix: tuple[tuple[str, float], ...]
    episodes: int | None = None
    steps: int | None = None
    split: str | None = None
    rules: tuple[tuple[str, Any], ...] = ()

    @property
    def switched(self) -> dict[str, Any]:
        """The stage's rule switch as a mapping (empty: the authored rules)."""
        return dict(self.rules)


@dataclass(frozen=True)
class VariantSchedule:
    """Per-episode distribution over variants, possibly changing by stage (a curriculum).

    Build one with `VariantSchedule.coerce` (or `from_config` for a YAML/JSON file):
        "contradicted"                               every episode contradicted
        {"original": 0.5, "contradicted": 0.5}       a mix, drawn per episode
        [{"episodes": 100, "mix": {"original": 1}},  a curriculum: 100 original episodes,
         {"mix": {"original": 0.5, "sampled": 0.5}}]  then a mix for the rest
        [{"episodes": 200, "mix": "original"},       a rule switch: the rule max_weight is
         {"mix": "original", "rules": {"max_weight": 200}}]  200 from episode 200 on

    A stage may last `steps` environment steps instead of `episodes` episodes, draw held-out
    values (`split: eval`), and switch rules (`rules: {name: value}`). Episodes and steps
    are counted per environment (each copy in a vector env counts its own); once a
    curriculum's stages are used up, its last stage stays in force.
    """

    stages: tuple[Stage, ...]

    @classmethod
    def coerce(cls, value: Any, task: Any = None) -> VariantSchedule:
        """A schedule from a name, a mix, a list of stages, or a schedule.

        Args:
            value: The schedule in one of the forms above.
            task: A task spec (anything with `variants`); the variants named must be among
                its variants (default: every variant termgym knows).

        Raises:
            ValueError: the value has none of the forms, or names an unknown variant, or a
                weight or episode count is unusable; the message says what was expected.
        """
        if isinstance(value, VariantSchedule):
            schedule = value
        elif isinstance(value, str):
            schedule = cls((Stage(((value, 1.0),)),))
        elif isinstance(value, Mapping) and "mix" not in value:
            schedule = cls((_stage({"mix": value}, 0),))
        elif isinstance(value, Mapping):
            schedule = cls((_stage(value, 0),))
        elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            schedule = cls(tuple(_stage(stage, n) for n, stage in enumerate(value)))
        else:
            raise ValueError(f"a variant schedule is {FORMS}; got {value!r}")
        schedule.validate(getattr(task, "variants", None) or VARIANTS)
        rules = getattr(task, "rules", None)
        if isinstance(rules, Mapping):
            schedule.validate_rules(rules)
        return schedule

    @classmethod
    def from_config(
        cls, source: str | Path | Mapping[str, Any], task: Any = None
    ) -> VariantSchedule:
        """A schedule from a YAML or JSON file (or its parsed content).

        The content is any form `coerce` accepts, or a mapping whose `schedule` key holds
        one (so the schedule can sit in a larger training configuration):

            schedule:
              - {episodes: 200, mix: {original: 1}}
              - {mix: {original: 1, contradicted: 1, sampled: 1}}
        """
        if isinstance(source, Mapping):
            content: Any = source
        else:
            path = Path(source)
            if not path.is_file():
                raise ValueError(f"expected a YAML or JSON schedule file; {str(path)!r} is no file")
            text = path.read_text()
            try:
                content = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
            except (json.JSONDecodeError, yaml.YAMLError) as exc:
                raise ValueError(f"{path}: expected valid YAML or JSON: {exc}") from exc
        if isinstance(content, Mapping) and "schedule" in content:
            content = content["schedule"]
        elif isinstance(content, Mapping) and not any(
            key in VARIANTS or did_you_mean(str(key), VARIANTS) for key in content
        ):  # no mix (whose names would be variants, or typos of them): a larger config
            where = "" if isinstance(source, Mapping) else f"{source}: "
            raise ValueError(
                f"{where}expected a 'schedule' key holding the schedule (or content that is "
                f"one: {FORMS}); found the keys {sorted(map(str, content))}"
            )
        return cls.coerce(content, task)

    def validate(self, allowed: Sequence[str]) -> None:
        """Check every variant named is one the task offers and every weight is usable."""
        if not self.stages:
            raise ValueError(f"a variant schedule needs at least one stage; expected {FORMS}")
        for number, stage in enumerate(self.stages):
            check_mix(
                stage.mix,
                allowed,
                f"stage {number}",
                unknown=lambda name: (
                    f"the task does not offer the variant {name!r} (its task.yaml `variants:`); "
                    f"expected one of {', '.join(allowed)}."
                    if name in VARIANTS
                    else f"unknown variant {name!r}; expected one of {', '.join(allowed)}."
                ),
                empty="expected a positive weight; they add up to 0",
            )
            if stage.episodes is None and stage.steps is None and number != len(self.stages) - 1:
                raise ValueError(
                    f"stage {number}: expected 'episodes' or 'steps' (only the last stage "
                    "may omit both)"
                )
            if stage.split is not None and stage.split not in SPLITS:
                raise ValueError(
                    f"stage {number}: expected 'split' to be one of {', '.join(SPLITS)}; "
                    f"got {stage.split!r}"
                )
        bounds = [s.steps for s in self.stages if s.steps is not None]
        if bounds != sorted(bounds) or len(set(bounds)) != len(bounds):
            raise ValueError(
                f"expected the stages' 'steps' to increase (they count from the start of "
                f"training); got {bounds}"
            )

    def validate_rules(self, rules: Mapping[str, Any]) -> None:
        """Check every switched rule exists and every switched value fits its rule."""
        for number, stage in enumerate(self.stages):
            for name, value in stage.rules:
                if name not in rules:
                    raise ValueError(
                        f"stage {number}: unknown rule {name!r} in 'rules'; expected one of "
                        f"{', '.join(sorted(rules))}.{did_you_mean(name, rules)}"
                    )
                try:
                    rules[name].with_value(value)
                except ValueError as exc:
                    raise ValueError(
                        f"stage {number}: rules.{name} = {value!r}: {validation_message(exc)}"
                    ) from None

    def stage_at(self, episode_index: int, steps: int = 0) -> Stage:
        """The stage in force for the given (0-based) episode number, after `steps`
        environment steps."""
        remaining = episode_index
        for stage in self.stages:
            if stage.steps is not None:
                if steps < stage.steps:
                    return stage
                continue
            if stage.episodes is None or remaining < stage.episodes:
                return stage
            remaining -= stage.episodes
        return self.stages[-1]

    def draw(self, rng: np.random.Generator, episode_index: int = 0, steps: int = 0) -> str:
        """Draw the variant of one episode."""
        return self.pick(rng, episode_index, steps)[0]

    def pick(
        self, rng: np.random.Generator, episode_index: int = 0, steps: int = 0
    ) -> tuple[str, Stage]:
        """Draw the variant of one episode; also return the stage it was drawn from."""
        stage = self.stage_at(episode_index, steps)
        names, weights = zip(*stage.mix, strict=True)
        if len(names) == 1:
            return names[0], stage
        p = np.asarray(weights, dtype=float)
        return str(names[int(rng.choice(len(names), p=p / p.sum()))]), stage

    def variants(self) -> list[str]:
        """Every variant the schedule can draw (with a positive weight)."""
        return list(dict.fromkeys(name for stage in self.stages for name, w in stage.mix if w > 0))


def _stage(value: Any, number: int) -> Stage:
    if not isinstance(value, Mapping):
        raise ValueError(
            f"stage {number}: expected a mapping {{'episodes': N, 'mix': {{...}}}}, got {value!r}"
        )
    unknown = set(value) - set(STAGE_KEYS)
    if unknown:
        raise ValueError(
            f"stage {number}: expected the keys {', '.join(STAGE_KEYS)}; got {sorted(unknown)}"
        )
    mix = value.get("mix")
    if isinstance(mix, str):
        mix = {mix: 1.0}
    if not isinstance(mix, Mapping) or not mix:
        raise ValueError(
            f"stage {number}: expected 'mix' to be a variant name or a non-empty "
            f"{{variant: weight}} mapping; got {mix!r}"
        )
    episodes = value.get("episodes")
    if episodes is not None and (
        isinstance(episodes, bool) or not isinstance(episodes, int) or episodes <= 0
    ):
        raise ValueError(
            f"stage {number}: expected 'episodes' to be a positive int or absent; got {episodes!r}"
        )
    steps = value.get("steps")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0):
        raise ValueError(
            f"stage {number}: expected 'steps' to be a positive int or absent; got {steps!r}"
        )
    if steps is not None and episodes is not None:
        raise ValueError(f"stage {number}: expected 'episodes' or 'steps', found both")
    rules = value.get("rules") or {}
    if not isinstance(rules, Mapping):
        raise ValueError(
            f"stage {number}: expected 'rules' to be a {{rule: value}} mapping; got {rules!r}"
        )
    split = value.get("split")
    return Stage(
        tuple((str(k), _weight(v, str(k), number)) for k, v in mix.items()),
        episodes,
        steps,
        None if split is None else str(split),
        tuple((str(k), v) for k, v in rules.items()),
    )


def _weight(value: Any, name: str, number: int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(
            f"stage {number}: expected a number as the weight of {name!r}, got {value!r}"
        )
    return float(value)


def check_mix(
    mix: Sequence[tuple[str, float]],
    allowed: Sequence[str],
    where: str,
    *,
    unknown: Callable[[str], str],
    empty: str,
) -> None:
    """A stage's mix names only `allowed` entries, with finite weights >= 0 and a positive
    total; errors start with `where`, `unknown(name)` says what an unknown name should be."""
    for name, weight in mix:
        if name not in allowed:
            raise ValueError(f"{where}: {unknown(name)}{did_you_mean(name, allowed)}")
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(
                f"{where}: the weight of {name!r} must be a finite number >= 0, got {weight}"
            )
    if sum(weight for _, weight in mix) <= 0:
        raise ValueError(f"{where}: {empty}")
