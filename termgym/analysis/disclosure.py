"""Scores conditioned on disclosure: pass rates where the agent disclosed hidden rules, and not.

An episode is *disclosed* when the trace audit found the agent writing a hidden rule value
(a leak hit) or its answer to the disclosure probe named one
(`AuditReport.disclosed_episodes`); a task is disclosed when any of its episodes is. For
each agent (docs/metrics.md):

- episodes: the pass rate of disclosed and of undisclosed episodes, and the difference,
  with a two-stage cluster bootstrap (tasks, then episodes within them), as every other
  rate;
- tasks: the mean per-task pass rate of disclosed and of undisclosed tasks, and the
  difference, with a bootstrap over tasks.

A high score carried by the disclosed episodes says the agent passes where it knew the
hidden rules, and not because it read the task.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from termgym.analysis.metrics import EpisodeSummary, Estimate


@dataclass(frozen=True)
class DisclosureSplit:
    """One agent's pass rates split by disclosure.

    Attributes:
        agent: The agent.
        disclosed / undisclosed / difference: Episode pass rates (difference: disclosed
            minus undisclosed), each with its interval; `n` counts episodes.
        tasks_disclosed / tasks_undisclosed / tasks_difference: The same over tasks (the
            mean of per-task pass rates); `n` counts tasks.
        by_mode: Probe mode -> (answers naming a hidden value, answers).
    """

    agent: str
    disclosed: Estimate
    undisclosed: Estimate
    difference: Estimate
    tasks_disclosed: Estimate
    tasks_undisclosed: Estimate
    tasks_difference: Estimate
    by_mode: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def rows(self) -> list[tuple[str, Estimate, Estimate, Estimate]]:
        """(unit, disclosed, undisclosed, difference) for "episodes" and "tasks"."""
        return [
            ("episodes", self.disclosed, self.undisclosed, self.difference),
            ("tasks", self.tasks_disclosed, self.tasks_undisclosed, self.tasks_difference),
        ]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _estimate(point: float, replicates: np.ndarray, n: int, alpha: float) -> Estimate:
    if np.isnan(point):
        return Estimate(None, None, None, n)
    values = replicates[~np.isnan(replicates)]
    if not len(values):
        return Estimate(float(point), None, None, n)
    low, high = (float(q) for q in np.quantile(values, [alpha, 1 - alpha]))
    return Estimate(float(point), low, high, n)


def disclosure_split(
    summaries: Iterable[EpisodeSummary],
    disclosed: set[str],
    *,
    by_mode: Mapping[str, tuple[int, int]] | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> DisclosureSplit:
    """Pass rates of one agent's counted episodes of possible variants, split by `disclosed`
    episode ids (a pass where the task is impossible is cheating, not a score: it stays
    out, as out of the overall pass rate)."""
    counted = [s for s in summaries if not s.infra_error and not s.impossible]
    agents = {s.agent for s in counted}
    tasks = sorted({s.task for s in counted})
    index = {t: i for i, t in enumerate(tasks)}
    task = np.array([index[s.task] for s in counted], dtype=int)
    passed = np.array([s.passed for s in counted], dtype=float)
    flag = np.array([s.episode_id in disclosed for s in counted], dtype=float)
    onehot = np.zeros((len(counted), len(tasks)))
    onehot[np.arange(len(counted)), task] = 1.0
    task_rate = _ratio(passed @ onehot, onehot.sum(axis=0))
    task_flag = (flag @ onehot > 0).astype(float)

    def episode_rates(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _ratio(w @ (passed * flag), w @ flag), _ratio(
            w @ (passed * (1 - flag)), w @ (1 - flag)
        )

    def task_rates(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rate = np.nan_to_num(task_rate)
        return _ratio(m @ (rate * task_flag), m @ task_flag), _ratio(
            m @ (rate * (1 - task_flag)), m @ (1 - task_flag)
        )

    ones_w, ones_m = np.ones((1, len(counted))), np.ones((1, len(tasks)))
    (d,), (u,) = episode_rates(ones_w) if counted else (np.array([np.nan]),) * 2
    (td,), (tu,) = task_rates(ones_m) if counted else (np.array([np.nan]),) * 2
    reps = {k: np.empty(0) for k in ("d", "u", "td", "tu")}
    if counted and resamples:
        rng = np.random.default_rng(seed)
        mult = rng.multinomial(len(tasks), np.full(len(tasks), 1 / len(tasks)), size=resamples)
        w = np.zeros((resamples, len(counted)))
        for t in range(len(tasks)):
            idx = np.flatnonzero(task == t)
            w[:, idx] = rng.multinomial(mult[:, t] * len(idx), np.full(len(idx), 1 / len(idx)))
        reps["d"], reps["u"] = episode_rates(w)
        reps["td"], reps["tu"] = task_rates(mult.astype(float))
    alpha = (1 - confidence) / 2
    n_d, n_td = int(flag.sum()), int(task_flag.sum())
    return DisclosureSplit(
        agent=agents.pop() if len(agents) == 1 else "",
        disclosed=_estimate(d, reps["d"], n_d, alpha),
        undisclosed=_estimate(u, reps["u"], len(counted) - n_d, alpha),
        difference=_estimate(d - u, reps["d"] - reps["u"], len(counted), alpha),
        tasks_disclosed=_estimate(td, reps["td"], n_td, alpha),
        tasks_undisclosed=_estimate(tu, reps["tu"], len(tasks) - n_td, alpha),
        tasks_difference=_estimate(td - tu, reps["td"] - reps["tu"], len(tasks), alpha),
        by_mode=dict(by_mode or {}),
    )
