"""Re-derive a recorded run's rule values from the evaluator's secret, and check them.

A recording keeps the episode's seed, variant, split, contradicted mode, rule switch, and
(with a secret) the secret's fingerprint and the rotation period, never the secret. Given the
secret again, every enforced value can be derived anew and compared with what the episode's
graders enforced, so an evaluation can be audited (or its values re-derived to re-grade it)
later, and a recording whose values were not drawn from that secret stands out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from termgym.errors import RecordingError, TermgymError
from termgym.recording import read_run
from termgym.tasks import Rotation, RuleDraw, get_task, instantiate, secret_id

STATUSES = ("ok", "mismatch", "other-secret", "needs-secret", "unverifiable")


@dataclass(frozen=True)
class ValueCheck:
    """What re-deriving one episode's values found.

    Attributes:
        episode_id: The episode.
        status: ok (the values derive from the seed and the secret), mismatch (they do not),
            other-secret (recorded under another secret), needs-secret (drawn with a secret
            that was not given), unverifiable (the task or the header is missing; `note`).
        recorded: The enforced values the recording holds.
        derived: The values derived anew (empty unless derived).
        note: What made it unverifiable, or a task version that differs.
    """

    episode_id: str
    status: str
    recorded: Mapping[str, Any]
    derived: Mapping[str, Any]
    note: str = ""


def _draw_of(extra: Mapping[str, Any], secret: str | None) -> tuple[RuleDraw | None, str]:
    """The episode's RuleDraw, or None and the status that stops the check."""
    found = extra.get("draw")
    recorded: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    split = str(recorded.get("split", "train"))
    contradict = str(recorded.get("contradict", "fixed" if not recorded else "drawn"))
    rotation = None
    if recorded.get("secret_id"):
        if not secret:
            return None, "needs-secret"
        if secret_id(secret) != recorded["secret_id"]:
            return None, "other-secret"
        rotation = Rotation(secret, str(recorded.get("period", "-")))
    return RuleDraw(split, contradict, rotation), ""  # type: ignore[arg-type]


def verify_values(
    run_dir: str | Path, secret: str | None = None, paths: Sequence[str | Path] = ()
) -> list[ValueCheck]:
    """Check each recorded episode's enforced values against those its seed (and the
    secret) derive; `paths` are task folders searched first (as `termgym run --path`).

    Raises:
        RecordingError: `run_dir` holds no recorded episode.
    """
    run = read_run(run_dir)
    if not run.episodes:
        raise RecordingError(f"expected recorded episodes in {run_dir}/episodes, found none")
    checks = []
    for log in run.episodes:
        header = log.header
        if header is None:
            checks.append(ValueCheck(log.episode_id, "unverifiable", {}, {}, "no header line"))
            continue
        recorded = dict(header.rules_enforced)
        draw, status = _draw_of(header.extra, secret)
        if draw is None:
            checks.append(ValueCheck(log.episode_id, status, recorded, {}))
            continue
        if header.seed is None:
            checks.append(ValueCheck(log.episode_id, "unverifiable", recorded, {}, "no seed"))
            continue
        try:
            task = get_task(header.task, list(paths) or None)
            switched = header.extra.get("switched") or None
            plan = instantiate(task, header.variant, int(header.seed), draw, switched)
        except TermgymError as exc:
            checks.append(ValueCheck(log.episode_id, "unverifiable", recorded, {}, str(exc)))
            continue
        derived = dict(plan.rules_enforced)
        note = ""
        if task.spec.version != header.task_version:
            note = f"task version {task.spec.version} now, {header.task_version} when recorded"
        status = "ok" if derived == recorded else "mismatch"
        checks.append(ValueCheck(log.episode_id, status, recorded, derived, note))
    return checks
