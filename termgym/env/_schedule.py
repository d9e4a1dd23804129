"""Variant schedules: which variant each episode runs, drawn inside the environment.

Gymnasium's autoreset calls `reset()` with no options, so a per-episode mix of variants
cannot come from the caller: it lives here, in the environment, drawn with its generator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

VARIANTS = ("original", "contradicted", "withheld", "swapped", "sampled")


@dataclass(frozen=True)
class Stage:
    """A mix of variants used for `episodes` episodes (None: for the rest of training)."""

    mix: tuple[tuple[str, float], ...]
    episodes: int | None = None


@dataclass(frozen=True)
class VariantSchedule:
    """Per-episode distribution over variants, possibly changing by stage (a curriculum).

    Build one with `VariantSchedule.coerce`:
        "contradicted"                               every episode contradicted
        {"original": 0.5, "contradicted": 0.5}       a mix, drawn per episode
        [{"episodes": 100, "mix": {"original": 1}},  a curriculum: 100 original episodes,
         {"mix": {"original": 0.5, "sampled": 0.5}}]  then a mix for the rest
    """

    stages: tuple[Stage, ...]

    @classmethod
    def coerce(cls, value: Any, task: Any = None) -> VariantSchedule:
        """A schedule from a name, a mix, a list of stages, or a schedule."""
        if isinstance(value, VariantSchedule):
            schedule = value
        elif isinstance(value, str):
            schedule = cls((Stage(((value, 1.0),)),))
        elif isinstance(value, Mapping) and "mix" not in value:
            schedule = cls((_stage({"mix": value}),))
        elif isinstance(value, Mapping):
            schedule = cls((_stage(value),))
        elif isinstance(value, Sequence):
            schedule = cls(tuple(_stage(stage) for stage in value))
        else:
            raise ValueError(
                "a variant schedule is a variant name, a {variant: weight} mix or a list of "
                f"stages {{'episodes': N, 'mix': {{...}}}}; got {value!r}"
            )
        schedule.validate(getattr(task, "variants", None) or VARIANTS)
        return schedule

    def validate(self, allowed: Sequence[str]) -> None:
        """Check every variant named is one the task offers and every weight is usable."""
        if not self.stages:
            raise ValueError("a variant schedule needs at least one stage")
        for number, stage in enumerate(self.stages):
            for name, weight in stage.mix:
                if name not in allowed:
                    raise ValueError(
                        f"stage {number}: unknown variant {name!r}; this task offers "
                        f"{', '.join(allowed)}"
                    )
                if weight < 0:
                    raise ValueError(f"stage {number}: weight of {name!r} is negative ({weight})")
            if sum(weight for _, weight in stage.mix) <= 0:
                raise ValueError(f"stage {number}: the weights add up to 0")
            if stage.episodes is None and number != len(self.stages) - 1:
                raise ValueError(f"stage {number}: only the last stage may omit 'episodes'")

    def stage_at(self, episode_index: int) -> Stage:
        """The stage in force for the given (0-based) episode number."""
        remaining = episode_index
        for stage in self.stages:
            if stage.episodes is None or remaining < stage.episodes:
                return stage
            remaining -= stage.episodes
        return self.stages[-1]

    def draw(self, rng: np.random.Generator, episode_index: int = 0) -> str:
        """Draw the variant of one episode."""
        names, weights = zip(*self.stage_at(episode_index).mix, strict=True)
        if len(names) == 1:
            return names[0]
        p = np.asarray(weights, dtype=float)
        return str(names[int(rng.choice(len(names), p=p / p.sum()))])

    def variants(self) -> list[str]:
        """Every variant the schedule can draw."""
        return list(dict.fromkeys(name for stage in self.stages for name, _ in stage.mix))


def _stage(value: Mapping[str, Any]) -> Stage:
    unknown = set(value) - {"mix", "episodes"}
    if unknown:
        raise ValueError(f"a schedule stage has keys 'mix' and 'episodes'; got {sorted(unknown)}")
    mix = value.get("mix")
    if not isinstance(mix, Mapping) or not mix:
        raise ValueError(f"a schedule stage needs a non-empty 'mix' mapping; got {mix!r}")
    episodes = value.get("episodes")
    if episodes is not None and (not isinstance(episodes, int) or episodes <= 0):
        raise ValueError(f"'episodes' must be a positive int or absent; got {episodes!r}")
    return Stage(tuple((str(k), float(v)) for k, v in mix.items()), episodes)
