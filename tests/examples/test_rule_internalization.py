"""The rule-internalization example's quick mode: it trains, evaluates and writes its results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.bwrap, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "rule_internalization.py"
METRICS = ("pass_rate[original]", "pass_rate[contradicted]", "stale_rate", "adaptation_rate")


def test_quick_mode_trains_both_conditions_and_writes_metrics_with_intervals(
    base_rootfs: str, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--backend", "bwrap", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert set(results["conditions"]) == {"fixed", "varied"}
    assert results["wall_seconds"] > 0
    for condition in results["conditions"].values():
        (run,) = condition["seeds"].values()
        assert run["train"]["episodes"] + run["train"]["infra_errors"] == 16
        assert run["train"]["env_steps"] >= 16 and run["train"]["curve"]
        pooled = condition["pooled"]
        assert pooled["episodes"] + pooled["infra_errors"] == 8  # 4 original + 4 contradicted
        for name in METRICS:
            estimate = pooled[name]
            assert 0.0 <= estimate["value"] <= 1.0, (name, estimate)
            assert estimate["low"] <= estimate["value"] <= estimate["high"], (name, estimate)
        shifted = pooled["class_counts"]["contradicted"]
        assert sum(shifted.values()) == pooled["stale_rate"]["n"] == 4


def test_quick_mode_of_the_rerun_evaluates_held_out_values_and_measures_recovery(
    base_rootfs: str, tmp_path: Path
) -> None:
    out = tmp_path / "rerun.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--backend", "bwrap", "--out", str(out),
         "--conditions", "balanced", "switch", "--eval-variants", "original", "held-out"],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    switch = results["conditions"]["switch"]
    (run,) = switch["seeds"].values()
    assert run["train"]["episodes"] + run["train"]["infra_errors"] == 32  # 16 before, 16 after
    assert run["train"]["switch_at"] == 16 and len(run["train"]["passed"]) == 32
    assert switch["recovery"]["switch_at"] == 16 and "episodes" in switch["recovery"]["text"]
    for condition in results["conditions"].values():
        held_out = condition["pooled"]["pass_rate[held-out]"]
        assert held_out["n"] == 4 and 0.0 <= held_out["value"] <= 1.0
    lines = (tmp_path / "rerun.training.jsonl").read_text().splitlines()
    assert len(lines) == 16 + 32 and json.loads(lines[0])["condition"] == "balanced"
