"""The gate's bootstrap decision: a paired bootstrap over episodes or tasks."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from termgym.analysis.metrics import EpisodeSummary
from termgym.cli import main
from termgym.report import compare_runs, load_run
from termgym.report._paired import paired_change


def _ep(task: str, index: int, passed: bool, agent: str = "a") -> EpisodeSummary:
    return EpisodeSummary(f"{task}-{index}", task, "original", agent, passed)


def test_pairing_cancels_what_both_runs_share() -> None:
    # every task is hard or easy in both runs alike; the candidate loses one episode of 40
    base = [_ep(f"t{t}", i, t % 2 == 0) for t in range(8) for i in range(5)]
    cand = list(base)
    cand[0] = _ep("t0", 0, False)
    change = paired_change(base, cand, agents=("a", "a"), metric="overall_pass_rate", seed=1)
    assert change.value == -1 / 40 and change.n == 40
    assert change.high == 0.0  # the interval reaches zero: noise explains it
    by_task = paired_change(
        base, cand, agents=("a", "a"), metric="pass_rate[original]", paired="tasks", seed=1
    )
    assert by_task.n == 8 and by_task.value == pytest.approx((-1 / 5) / 8)


def test_the_overall_change_pairs_the_episodes_the_overall_pass_rate_counts() -> None:
    # the candidate stops passing impossible episodes (it no longer cheats); its possible
    # episodes pass as before: the overall pass rate, which leaves impossible ones out, holds
    base = [_ep("t0", i, True) for i in range(4)]
    base += [EpisodeSummary(f"t0-imp-{i}", "t0", "impossible", "a", True) for i in range(4)]
    cand = [_ep("t0", i, True) for i in range(4)]
    cand += [EpisodeSummary(f"t0-imp-{i}", "t0", "impossible", "a", False) for i in range(4)]
    change = paired_change(base, cand, agents=("a", "a"), metric="overall_pass_rate", seed=1)
    assert change.value == 0.0 and change.n == 4
    cheating = paired_change(base, cand, agents=("a", "a"), metric="pass_rate[impossible]")
    assert cheating.value == -1.0 and cheating.n == 4


def test_no_common_unit_leaves_the_change_undefined() -> None:
    base = [_ep("t0", 0, True)]
    cand = [_ep("t1", 0, True)]
    assert paired_change(base, cand, agents=("a", "a"), metric="overall_pass_rate").value is None


def test_bootstrap_decision_ignores_a_drop_noise_explains_and_flags_a_real_one(make_run) -> None:
    base = load_run(make_run("base", n_tasks=2, per_task=2), resamples=0)
    small = load_run(make_run("small", n_tasks=2, per_task=2, pass_contradicted=0.5), resamples=0)
    threshold = compare_runs(base, small, max_drop=0.1)
    assert any(c.regressed and c.metric == "pass_rate[contradicted]" for c in threshold)
    boot = compare_runs(base, small, max_drop=0.1, decision="bootstrap", resamples=500)
    contradicted = next(c for c in boot if c.metric == "pass_rate[contradicted]")
    assert contradicted.paired is not None and contradicted.paired.n == 4
    assert contradicted.paired.value == -0.5
    assert not contradicted.regressed  # 4 pairs: an interval reaching zero
    big_base = load_run(make_run("bigbase", n_tasks=10, per_task=4), resamples=0)
    big = load_run(make_run("big", n_tasks=10, per_task=4, pass_contradicted=0.25), resamples=0)
    boot = compare_runs(big_base, big, max_drop=0.1, decision="bootstrap", resamples=500)
    contradicted = next(c for c in boot if c.metric == "pass_rate[contradicted]")
    assert contradicted.regressed and contradicted.paired.high < 0
    assert "paired change -75.0" in contradicted.describe()


def test_the_cli_exposes_the_decision_and_the_pairing(make_run) -> None:
    base = make_run("base", n_tasks=10, per_task=4)
    cand = make_run("cand", n_tasks=10, per_task=4, pass_contradicted=0.25)
    result = CliRunner(env={"COLUMNS": "220"}).invoke(
        main,
        [
            "compare", str(base), str(cand), "--max-drop", "0.1", "--resamples", "200",
            "--decision", "bootstrap", "--paired", "tasks",
        ],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "paired change (tasks)" in result.output
    assert "REGRESSION: oracle pass_rate[contradicted] fell 75.0 points" in result.output
    bad = CliRunner().invoke(main, ["compare", str(base), str(cand), "--max-drop", "0.1",
                                    "--decision", "vibes"])  # fmt: skip
    assert bad.exit_code == 2 and "vibes" in bad.output
