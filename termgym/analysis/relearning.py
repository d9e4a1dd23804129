"""Relearning after a rule change: episodes-to-recover from a training log (docs/metrics.md).

A training log holds, per seed, the pass (1) or fail (0) of each training episode in order,
and the episode at which the enforced rule switched. For one seed:

- the pre-switch rate p is the mean pass over the `window` episodes before the switch;
- the target is `fraction` x p;
- episodes-to-recover is the smallest k such that the mean pass over post-switch episodes
  k - window + 1 .. k reaches the target (so at least `window` episodes after the switch);
- a seed that never gets there within its log is *censored*: its value is only known to be
  more than the post-switch episodes it has.

Across seeds the estimate is the mean, with a percentile bootstrap over seeds (seeds drawn
with replacement); censored seeds enter with their post-switch length, a lower bound, and
the estimate says how many there were.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from termgym.analysis.metrics import Estimate


@dataclass(frozen=True)
class TrainingLog:
    """Pass/fail per training episode for each seed, and where the rule switched.

    Attributes:
        passed: Seed -> 1.0/0.0 per episode, in training order.
        switch_at: Index of the first episode under the new rule.
    """

    passed: Mapping[str, tuple[float, ...]]
    switch_at: int

    def __post_init__(self) -> None:
        if not self.passed:
            raise ValueError("training log: expected at least one seed, found none")
        for seed, values in self.passed.items():
            if not 0 < self.switch_at < len(values):
                raise ValueError(
                    f"training log: expected the switch inside every seed's episodes; seed "
                    f"{seed} has {len(values)} episodes, the switch is at {self.switch_at}"
                )


@dataclass(frozen=True)
class Recovery:
    """Episodes-to-recover across seeds.

    Attributes:
        episodes: Mean episodes-to-recover over seeds, with its bootstrap interval.
        per_seed: Seed -> episodes-to-recover, or None when censored.
        censored: Seeds that did not recover within their log.
        pre_rate: Seed -> pre-switch pass rate.
        fraction: The share of the pre-switch rate that counts as recovered.
        window: Episodes the moving pass rate is taken over.
        switch_at: The switch episode.
    """

    episodes: Estimate
    per_seed: Mapping[str, int | None]
    censored: int
    pre_rate: Mapping[str, float]
    fraction: float
    window: int
    switch_at: int
    curve: tuple[float, ...] = field(default=())
    """Mean over seeds of the moving pass rate at each episode (nan until a full window,
    counted from the start and again from the switch)."""

    def format(self) -> str:
        """E.g. "57.3 [41.0, 80.7] episodes (1 of 3 seeds censored)"."""
        text = self.episodes.format(percent=False) + " episodes"
        if self.censored:
            text = ">= " + text + f" ({self.censored} of {len(self.per_seed)} seeds censored)"
        return text


def moving_rate(passed: Sequence[float], window: int) -> np.ndarray:
    """The mean of each trailing `window` of `passed` (nan where fewer than `window` exist)."""
    x = np.asarray(passed, dtype=float)
    out = np.full(len(x), np.nan)
    if len(x) >= window:
        sums = np.convolve(x, np.ones(window), mode="valid")
        out[window - 1 :] = sums / window
    return out


def episodes_to_recover(
    passed: Sequence[float], switch_at: int, *, fraction: float = 0.9, window: int = 20
) -> int | None:
    """Post-switch episodes until the moving pass rate is back to `fraction` of the
    pre-switch rate; None when it never is within `passed`."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction: expected a number in (0, 1], found {fraction}")
    if window < 1:
        raise ValueError(f"window: expected a positive number of episodes, found {window}")
    before = np.asarray(passed[max(0, switch_at - window) : switch_at], dtype=float)
    target = fraction * float(before.mean())
    after = moving_rate(passed[switch_at:], window)
    hits = np.flatnonzero(after >= target - 1e-12)
    return int(hits[0]) + 1 if len(hits) else None


def recovery(
    log: TrainingLog,
    *,
    fraction: float = 0.9,
    window: int = 20,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> Recovery:
    """Episodes-to-recover of every seed, and their mean with a bootstrap over seeds."""
    per_seed: dict[str, int | None] = {}
    pre: dict[str, float] = {}
    lower_bounds = []
    for name, passed in sorted(log.passed.items()):
        value = episodes_to_recover(passed, log.switch_at, fraction=fraction, window=window)
        per_seed[name] = value
        pre[name] = float(np.mean(passed[max(0, log.switch_at - window) : log.switch_at]))
        lower_bounds.append(value if value is not None else len(passed) - log.switch_at)
    values = np.asarray(lower_bounds, dtype=float)
    low = high = None
    if resamples and len(values) > 1:
        rng = np.random.default_rng(seed)
        draws = rng.integers(0, len(values), size=(resamples, len(values)))
        means = values[draws].mean(axis=1)
        alpha = (1 - confidence) / 2
        low, high = (float(q) for q in np.quantile(means, [alpha, 1 - alpha]))
    length = min(len(p) for p in log.passed.values())
    # before and after the switch apart: no window mixes episodes of the two rules
    curves = np.vstack(
        [
            np.concatenate(
                [
                    moving_rate(p[: log.switch_at], window),
                    moving_rate(p[log.switch_at : length], window),
                ]
            )
            for p in log.passed.values()
        ]
    )
    return Recovery(
        episodes=Estimate(float(values.mean()), low, high, len(values)),
        per_seed=per_seed,
        censored=sum(v is None for v in per_seed.values()),
        pre_rate=pre,
        fraction=fraction,
        window=window,
        switch_at=log.switch_at,
        curve=tuple(float(v) for v in curves.mean(axis=0)),
    )


def _whole(value: object, where: str) -> int:
    """`value` as the int a log line must give there (JSON's 3, not "3", 3.5 or true)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: expected an int, found {value!r}")
    return value


def read_training_log(
    path: str | Path, switch_at: int | None = None, condition: str | None = None
) -> TrainingLog:
    """A training log from JSONL lines {"seed", "episode", "passed" (or "reward")}, plus an
    optional line {"switch_at": N} (`switch_at` given here wins). Lines may name a
    "condition"; a log holding several needs `condition` to pick one.

    Raises:
        ValueError: a line is not JSON or lacks its fields, no switch is known, or the log
            holds several conditions and none was chosen.
    """
    path = Path(path)
    episodes: dict[str, dict[int, float]] = defaultdict(dict)
    recorded_switch = None
    conditions: set[str] = set()
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ValueError(
                f"{path}:{number}: expected a JSON object, found {line[:60]!r}"
            ) from exc
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object, found {line[:60]!r}")
        if "switch_at" in record:
            recorded_switch = _whole(record["switch_at"], f"{path}:{number}: switch_at")
            continue
        if "condition" in record:
            conditions.add(str(record["condition"]))
            if condition is not None and str(record["condition"]) != condition:
                continue
        if "seed" not in record or "episode" not in record:
            raise ValueError(
                f"{path}:{number}: expected the keys seed and episode, found {sorted(record)}"
            )
        outcome = record.get("passed", record.get("reward"))
        if not isinstance(outcome, int | float) or not math.isfinite(float(outcome)):
            raise ValueError(
                f"{path}:{number}: expected passed (bool) or reward (number), found {outcome!r}"
            )
        passed = float(outcome) >= 1.0 - 1e-9 if "passed" not in record else bool(outcome)
        episode = _whole(record["episode"], f"{path}:{number}: episode")
        episodes[str(record["seed"])][episode] = float(passed)
    if condition is None and len(conditions) > 1:
        raise ValueError(f"{path}: expected one condition, found {sorted(conditions)}; choose one")
    if condition is not None and condition not in conditions:
        raise ValueError(f"{path}: no condition {condition!r}; found {sorted(conditions)}")
    switch = switch_at if switch_at is not None else recorded_switch
    if switch is None:
        raise ValueError(f"{path}: expected a switch_at line or --switch-at, found neither")
    return TrainingLog(
        {s: tuple(v for _, v in sorted(e.items())) for s, e in episodes.items()}, switch
    )
