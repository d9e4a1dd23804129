"""How an episode's shifted rule values are drawn: the split, the contradicted mode, the secret.

A rule's values fall into two sets (docs/held-out-values.md):

- training values: every value of its range or choices except the authored one and the
  held-out ones (`held_out`, `held_out_range` in task.yaml);
- held-out values: the ones kept for evaluation.

Under split "train" (the default) the sampled and contradicted variants draw training values;
under split "eval" they draw held-out values, and only rules that have some are shifted.

Without a secret, draws are seeded by the task id and the episode seed, so anyone who has
the task and the seed can recompute them (fine for training, reproducible for research).
With an evaluator's secret (`Rotation`), draws are seeded by an HMAC of the secret, the
rotation period, the task and the seed, and each period uses its own subset of the
held-out values: a published task and seed reveal nothing of the next period's values.
The secret itself lives only in memory: recordings keep `secret_id` (a keyed fingerprint
that identifies the secret without revealing it) and the period, enough to re-derive and
audit every value later with the secret (`termgym verify-values`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import math
import os
import random
from dataclasses import dataclass, field
from typing import Any, Literal

Split = Literal["train", "eval"]
SPLITS: tuple[Split, ...] = ("train", "eval")
"""Which of a rule's value sets shifted variants draw from."""

ContradictMode = Literal["drawn", "fixed"]
CONTRADICT_MODES: tuple[ContradictMode, ...] = ("drawn", "fixed")
"""How the contradicted variant picks its value: drawn per episode from the non-original
values of the split (the default), or the authored `contradict` value every time."""

RotationScheme = Literal["week", "day", "month", "none"]
ROTATIONS: tuple[RotationScheme, ...] = ("week", "day", "month", "none")

SECRET_ENV = "TERMGYM_SECRET"
"""The environment variable an evaluator's secret may come from (never written anywhere)."""
MIN_SECRET_CHARS = 16


def period_of(scheme: RotationScheme, when: _dt.date | None = None) -> str:
    """The rotation period a date falls in: "2026-W49", "2026-12-01", "2026-12", or "-"."""
    day = when or _dt.datetime.now(_dt.UTC).date()
    if scheme == "week":
        year, week, _ = day.isocalendar()
        return f"{year}-W{week:02d}"
    if scheme == "day":
        return day.isoformat()
    if scheme == "month":
        return f"{day.year}-{day.month:02d}"
    if scheme == "none":
        return "-"
    raise ValueError(f"rotation: expected one of {', '.join(ROTATIONS)}, found {scheme!r}")


def secret_id(secret: str) -> str:
    """A keyed fingerprint of the secret: identifies it in recordings, reveals nothing."""
    return hmac.new(secret.encode(), b"termgym secret id", hashlib.sha256).hexdigest()[:16]


@dataclass(frozen=True)
class Rotation:
    """An evaluator's secret and the rotation period its draws belong to.

    The secret never appears in repr, recordings, run.json or logs; `public()` is what may.
    """

    secret: str = field(repr=False)
    period: str = "-"

    def __post_init__(self) -> None:
        if len(self.secret) < MIN_SECRET_CHARS:
            raise ValueError(
                f"secret: expected at least {MIN_SECRET_CHARS} characters (e.g. "
                f"`openssl rand -hex 32`), found {len(self.secret)}"
            )

    @classmethod
    def current(
        cls, secret: str, scheme: RotationScheme = "week", when: _dt.date | None = None
    ) -> Rotation:
        """The rotation of `secret` for the period `when` (default: today, UTC) falls in."""
        return cls(secret, period_of(scheme, when))

    @classmethod
    def from_env(
        cls, scheme: RotationScheme = "week", period: str | None = None
    ) -> Rotation | None:
        """The rotation of $TERMGYM_SECRET, or None when it is unset."""
        secret = os.environ.get(SECRET_ENV)
        if not secret:
            return None
        return cls(secret, period) if period else cls.current(secret, scheme)

    @property
    def secret_id(self) -> str:
        return secret_id(self.secret)

    def key(self, *parts: object) -> str:
        """A seed string for `random.Random`, keyed by the secret and the period."""
        message = ":".join(["termgym", self.period, *map(str, parts)]).encode()
        return hmac.new(self.secret.encode(), message, hashlib.sha256).hexdigest()

    def public(self) -> dict[str, str]:
        """What recordings keep: the secret's fingerprint and the period."""
        return {"secret_id": self.secret_id, "period": self.period}


@dataclass(frozen=True)
class RuleDraw:
    """How shifted values are drawn for an episode (see the module docstring).

    Attributes:
        split: "train" (training values) or "eval" (held-out values).
        contradict: "drawn" (a non-original value of the split per episode) or "fixed"
            (the authored `contradict` value).
        rotation: The evaluator's secret and period, or None (draws seeded publicly).
    """

    split: Split = "train"
    contradict: ContradictMode = "drawn"
    rotation: Rotation | None = None

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"split: expected one of {', '.join(SPLITS)}, found {self.split!r}")
        if self.contradict not in CONTRADICT_MODES:
            raise ValueError(
                f"contradict: expected one of {', '.join(CONTRADICT_MODES)}, "
                f"found {self.contradict!r}"
            )

    @classmethod
    def coerce(cls, value: Any) -> RuleDraw:
        """A RuleDraw from a RuleDraw, None (the defaults) or a mapping of its fields."""
        if value is None:
            return cls()
        if isinstance(value, RuleDraw):
            return value
        if isinstance(value, dict):
            unknown = set(value) - {"split", "contradict", "rotation"}
            if unknown:
                raise ValueError(
                    f"rule draw: expected the keys split, contradict, rotation; "
                    f"found {sorted(unknown)}"
                )
            return cls(**value)
        raise ValueError(f"rule draw: expected a RuleDraw or a mapping, found {value!r}")

    def rng(self, task_id: str, seed: int, purpose: str = "") -> random.Random:
        """The generator of one episode's draws for `purpose` ("" for sampled values)."""
        if self.rotation is not None:
            return random.Random(self.rotation.key(task_id, seed, purpose))
        suffix = f":{purpose}" if purpose else ""
        return random.Random(f"termgym:{task_id}:{seed}{suffix}")

    def active_held_out(self, task_id: str, rule: str, values: list[Any]) -> list[Any]:
        """The held-out values in use: all of them, or this period's half under a secret."""
        if self.rotation is None or len(values) < 2:
            return list(values)
        rng = random.Random(self.rotation.key(task_id, "held-out", rule))
        return sorted(rng.sample(values, math.ceil(len(values) / 2)), key=str)

    def public(self) -> dict[str, Any]:
        """What a recording keeps of the draw (never the secret)."""
        out: dict[str, Any] = {"split": self.split, "contradict": self.contradict}
        if self.rotation is not None:
            out.update(self.rotation.public())
        return out
