"""Pass rates split by disclosure, on summaries whose answers are known."""

from __future__ import annotations

from termgym.analysis.disclosure import disclosure_split
from termgym.analysis.metrics import EpisodeSummary, compute_metrics


def _ep(episode_id: str, task: str, variant: str, passed: bool) -> EpisodeSummary:
    return EpisodeSummary(episode_id, task, variant, "a", passed)


def test_the_split_counts_the_episodes_the_overall_pass_rate_counts() -> None:
    # the oracle: every possible episode passes, every impossible one fails (it reports)
    episodes = [_ep(f"t{t}-o{i}", f"t{t}", "original", True) for t in range(2) for i in range(3)]
    episodes += [_ep(f"t{t}-x{i}", f"t{t}", "impossible", False) for t in (0, 1) for i in (0, 1)]
    split = disclosure_split(episodes, {"t0-o0"}, resamples=0)
    assert compute_metrics(episodes, resamples=0).overall_pass_rate.value == 1.0
    assert (split.disclosed.value, split.disclosed.n) == (1.0, 1)
    assert (split.undisclosed.value, split.undisclosed.n) == (1.0, 5)
    assert split.difference.value == 0.0
    assert (split.tasks_disclosed.value, split.tasks_undisclosed.value) == (1.0, 1.0)
