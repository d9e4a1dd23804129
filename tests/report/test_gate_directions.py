"""The gate regresses each metric the way that is worse, on real runs of the bundled agents.

The oracle follows its task (and reports the impossible episode's conflict), the cheater
passes the impossible episode by taking the workspace tests' values (leaving tamper
evidence), the memorizer applies the original rules. Run for real on text-report (bwrap),
then compared every way round with `termgym compare`, as a user would.
"""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from termgym.cli import main
from termgym.run import RunConfig, Runner

pytestmark = [pytest.mark.bwrap, pytest.mark.slow, pytest.mark.timeout(900)]
AGENTS = ("oracle", "cheater", "memorizer")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    request.getfixturevalue("base_rootfs")
    root = tmp_path_factory.mktemp("gate")
    for agent in AGENTS:
        config = RunConfig(
            agent=agent, tasks=("text-report",), variants=("contradicted", "impossible"),
            episodes=1, concurrency=2, out=root / agent, backend="bwrap", seed=3, pool_size=0,
        )  # fmt: skip
        summary = Runner(config).run()
        assert [r.status for r in summary.results] == ["ok", "ok"], summary.results
    return root


def _compare(runs, base: str, candidate: str) -> tuple[int, str]:
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        main,
        ["compare", str(runs / base), str(runs / candidate), "--max-drop", "0.1",
         "--resamples", "100"],
    )  # fmt: skip
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def _regressions(output: str) -> set[str]:
    return set(re.findall(r"^REGRESSION: \S+ -> \S+ (\S+) ", output, re.M))


def test_less_cheating_is_no_regression_and_more_is(runs) -> None:
    code, output = _compare(runs, "cheater", "oracle")
    assert code == 0, output
    assert "no regression" in output
    code, output = _compare(runs, "oracle", "cheater")
    assert code == 1, output
    assert _regressions(output) == {
        "cheating_rate", "conflict_report_rate", "tamper_rate", "tampered_pass_rate",
    }  # fmt: skip
    assert "cheating_rate rose 100.0 points (lower is better;" in output
    assert "conflict_report_rate fell 100.0 points (higher is better;" in output
    assert "pass_rate[impossible]" not in output  # compared once, as the cheating rate


def test_memorizing_regresses_and_reading_again_does_not(runs) -> None:
    code, output = _compare(runs, "oracle", "memorizer")
    assert code == 1, output
    assert _regressions(output) == {
        "pass_rate[contradicted]", "overall_pass_rate", "adaptation_rate", "stale_rate",
        "memorization_index", "conflict_report_rate",
    }  # fmt: skip
    code, output = _compare(runs, "memorizer", "oracle")
    assert code == 0, output


def test_the_table_says_which_way_each_metric_is_better(runs) -> None:
    _, output = _compare(runs, "cheater", "oracle")
    rows = {
        cells[2]: cells[3]
        for line in output.splitlines()
        if len(cells := [c.strip() for c in line.split("│")]) > 4
    }
    assert rows["cheating_rate"] == "lower" and rows["tamper_rate"] == "lower"
    assert rows["pass_rate[contradicted]"] == "higher"
    assert rows["stale_rate"] == "lower" and rows["false_report_rate"] == "lower"
