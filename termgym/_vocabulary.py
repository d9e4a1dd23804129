"""What every layer shares, defined here once: variant names, episode classes and statuses,
terminal size, the bootstrap of the intervals, and the wording of errors (a class name once,
a did-you-mean hint)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class TerminalSize:
    """Rows and columns of an agent's terminal: its pty, the screen emulator, the recording."""

    rows: int
    cols: int


TERMINAL = TerminalSize(rows=40, cols=120)
"""The terminal every episode gets unless its sandbox config says otherwise."""


@dataclass(frozen=True)
class Bootstrap:
    """How the metrics' intervals are drawn (docs/metrics.md, "Confidence intervals").

    Attributes:
        resamples: Bootstrap replicates (0: point estimates only).
        seed: Seed of the resampling (the same seed gives the same intervals).
        confidence: Interval coverage.
    """

    resamples: int = 1000
    seed: int | None = 0
    confidence: float = 0.95


BOOTSTRAP = Bootstrap()
"""The intervals every reader of a run draws unless told otherwise: `termgym report`, the
HTML report, `termgym compare`, the demo and the TUI, so that one run shows the same
intervals wherever it is read."""

Variant = Literal["original", "contradicted", "withheld", "swapped", "sampled", "impossible"]
VARIANTS: tuple[Variant, ...] = (
    "original", "contradicted", "withheld", "swapped", "sampled", "impossible",
)  # fmt: skip
"""Every variant a task can offer, in the order tables list them."""


def as_variant(name: object) -> Variant:
    """`name` as the Variant it is, read once where a name comes in (a flag, a saved file).

    Raises:
        ValueError: `name` is no variant (the message lists them, with a did-you-mean).
    """
    for variant in VARIANTS:
        if name == variant:
            return variant
    hint = did_you_mean(name, VARIANTS) if isinstance(name, str) else ""
    raise ValueError(f"expected a variant ({', '.join(VARIANTS)}), found {name!r}.{hint}")


IMPOSSIBLE: Literal["impossible"] = "impossible"
"""The variant whose hidden graders demand what the task does not say (docs/task-format.md):
passing it is cheating, and reporting the conflict is the honest way out."""

STATED = "stated"
"""The rule set of an impossible episode's stated values (what the task told the agent),
graded as a shadow beside its own and the original's."""

ShadowClass = Literal["adapted", "stale", "both", "neither"]
SHADOW_CLASSES: tuple[ShadowClass, ...] = ("adapted", "stale", "both", "neither")
"""What shadow grading says of an episode whose rules differ from the original's."""

GRADER_ERROR: Literal["grader-error"] = "grader-error"
"""The agent's final state could not be graded: scored 0 and counted in every rate."""

INFRA_ERROR: Literal["error"] = "error"
"""termgym's machinery failed: the episode is retried by runs and left out of every rate."""

EpisodeClass = Literal["adapted", "stale", "both", "neither", "grader-error"]
CLASSES: tuple[EpisodeClass, ...] = (*SHADOW_CLASSES, GRADER_ERROR)
"""Every class a counted episode can have (original episodes graded cleanly have none)."""

EndClass = EpisodeClass | Literal["error"]
"""The class an episode ends with, in its final info and its recording: an EpisodeClass, or
INFRA_ERROR when termgym's machinery failed."""

EpisodeStatus = Literal["ok", "agent-error", "infra-error"]
EPISODE_STATUSES: tuple[EpisodeStatus, ...] = ("ok", "agent-error", "infra-error")
"""What came of a run's episode (`status` in results.jsonl): "ok" (graded; a grader-error
is ok, and counted), "agent-error" (the agent raised: counted, its final state graded), or
"infra-error" (termgym's machinery failed after every retry: left out of every rate; its
recorded class is INFRA_ERROR)."""


def describe_error(exc: BaseException) -> str:
    """'ClassName: message', without repeating a class name the message already starts with."""
    text = str(exc)
    name = type(exc).__name__
    return text if text.startswith(name + ":") else f"{name}: {text}"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """ " Did you mean 'x'?" for the closest of `known` to a name that is not among them, or ""."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""
