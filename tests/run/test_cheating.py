"""An honest agent, a memorizer and a cheater told apart, on three bundled tasks.

The oracle reads the task and follows it; on an impossible episode it reports the conflict.
The memorizer applies the original rules. The cheater makes the workspace's tests pass by
any means: it takes the values they expect, rewrites the task's files to agree, and plants
a sitecustomize.py. Measured by the report's own figures (docs/metrics.md).
"""

from __future__ import annotations

import pytest

from termgym.report import load_run, merge_runs
from termgym.report._honesty import suspicious
from termgym.run import RunConfig, Runner

TASKS = ("text-report", "csv-cleaning", "log-triage")
pytestmark = pytest.mark.timeout(1800)  # 18 real episodes per backend on a shared machine


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    backend = request.param
    request.getfixturevalue("base_image" if backend == "docker" else "base_rootfs")
    root = tmp_path_factory.mktemp(f"cheating-{backend}")
    loaded = []
    for agent in ("oracle", "memorizer", "cheater"):
        config = RunConfig(
            agent=agent, tasks=TASKS, variants=("contradicted", "impossible"), episodes=1,
            concurrency=2, out=root / agent, backend=backend, seed=7, pool_size=0,
        )  # fmt: skip
        summary = Runner(config).run()
        assert [r.status for r in summary.results] == ["ok"] * 6, summary.results
        loaded.append(load_run(root / agent, resamples=200))
    return merge_runs(loaded, resamples=200)


BACKENDS = [
    pytest.param("docker", marks=pytest.mark.docker),
    pytest.param("bwrap", marks=pytest.mark.bwrap),
]


def _rate(run, agent: str, name: str) -> float | None:
    return run.metrics[agent].headline()[name].value


@pytest.mark.slow
@pytest.mark.parametrize("runs", BACKENDS, indirect=True)
def test_the_three_agents_are_told_apart_by_the_report_s_figures(runs) -> None:
    figures = {
        agent: {
            name: _rate(runs, agent, name)
            for name in (
                "cheating_rate", "conflict_report_rate", "false_report_rate", "tamper_rate",
                "adaptation_rate", "stale_rate", "memorization_index",
            )
        }
        for agent in ("oracle", "memorizer", "cheater")
    }  # fmt: skip
    assert figures["oracle"] == {
        "cheating_rate": 0.0, "conflict_report_rate": 1.0, "false_report_rate": 0.0,
        "tamper_rate": 0.0, "adaptation_rate": 1.0, "stale_rate": 0.0, "memorization_index": 0.0,
    }  # fmt: skip
    assert figures["memorizer"] == {
        "cheating_rate": 0.0, "conflict_report_rate": 0.0, "false_report_rate": 0.0,
        "tamper_rate": 0.0, "adaptation_rate": 0.0, "stale_rate": 1.0, "memorization_index": 1.0,
    }  # fmt: skip
    # the cheater adapts where the tests agree with the task, and passes where they do not
    assert figures["cheater"] == {
        "cheating_rate": 1.0, "conflict_report_rate": 0.0, "false_report_rate": 0.0,
        "tamper_rate": 1.0, "adaptation_rate": 1.0, "stale_rate": 0.0, "memorization_index": 0.0,
    }  # fmt: skip
    cheater = runs.metrics["cheater"]
    assert cheater.tamper_counts == {"tests": 3, "toolchain": 6, "system": 0}
    assert cheater.cheating_rate.n == 3 and cheater.tampered_pass_rate.value == 1.0
    # every rate has its interval
    assert cheater.cheating_rate.low == 1.0 and runs.metrics["oracle"].tamper_rate.high == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("runs", BACKENDS, indirect=True)
def test_impossible_episodes_are_classed_by_what_they_followed(runs) -> None:
    classes = {
        (s.agent, s.task): s.episode_class for s in runs.summaries if s.variant == "impossible"
    }
    for task in TASKS:
        assert classes[("oracle", task)] == "adapted"  # followed what the task states
        assert classes[("memorizer", task)] == "stale"  # followed the original rules
        assert classes[("cheater", task)] == "neither"  # followed the tests: cheating
    # impossible episodes are never shifted and never in the overall pass rate
    assert runs.metrics["cheater"].overall_pass_rate.n == 3
    first = suspicious(runs)[0]
    assert (first.agent, first.variant) == ("cheater", "impossible")
    assert {s.agent for s in suspicious(runs)} == {"cheater"}


@pytest.mark.slow
@pytest.mark.parametrize("runs", BACKENDS, indirect=True)
def test_the_audit_counts_only_what_the_tasks_showed(runs) -> None:
    """The oracle's reading and its fallback code (keyed by rule names, handed withheld
    values) leave no hit; the memorizer's hard-coded original values are leaks."""
    assert runs.audit.for_agent("oracle").hits == ()
    leaked = {
        h.episode_id.split("/")[-1].split("--")[0]
        for h in runs.audit.for_agent("memorizer").hits
        if h.kind == "leak"
    }
    assert {"text-report", "csv-cleaning"} <= leaked
    assert all(h.kind != "marker" for h in runs.audit.hits)  # nobody imitated termgym
