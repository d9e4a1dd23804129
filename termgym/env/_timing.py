"""Wall-clock measurements carried in step info, equal to each other by design."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Duration:
    """How long something took, in seconds (`info["duration"].seconds`, or `float(...)`).

    Two Durations compare equal whatever they measured: a duration is a measurement of the
    machine, not a decision of the environment, so an episode replayed with the same seed
    and actions yields equal infos (Gymnasium's `check_env` checks exactly that).
    """

    seconds: float = field(compare=False)

    def __float__(self) -> float:
        return self.seconds

    def __format__(self, spec: str) -> str:
        return format(self.seconds, spec or ".3f")
