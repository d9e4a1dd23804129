"""The shipped alerting rules: valid, and each fires on its regression (promtool's tests)."""

from __future__ import annotations

import subprocess
from pathlib import Path

MONITORING = Path(__file__).resolve().parents[2] / "docs" / "monitoring"


def test_the_rules_parse(promtool: str) -> None:
    done = subprocess.run(
        [promtool, "check", "rules", str(MONITORING / "termgym-rules.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 12 rules found" in done.stdout


def test_promtool_unit_tests_of_every_alert_pass(promtool: str) -> None:
    done = subprocess.run(
        [promtool, "test", "rules", "termgym-rules.test.yml"],
        cwd=MONITORING,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout + done.stderr


def test_every_alert_has_a_unit_test() -> None:
    import yaml

    rules = yaml.safe_load((MONITORING / "termgym-rules.yml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    tests = yaml.safe_load((MONITORING / "termgym-rules.test.yml").read_text())
    firing = {
        case["alertname"]
        for test in tests["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert (
        alerts
        == firing
        == {
            "TermgymPassRateDropAfterRuleChange",
            "TermgymStaleRuleRateRising",
            "TermgymDisclosureRateRising",
            "TermgymErrorRateRising",
        }
    )
