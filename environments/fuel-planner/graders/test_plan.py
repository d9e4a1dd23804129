"""Hidden checks: the planner applies the policy's weight limit and reserve to new manifests."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))


def plan(tmp_path: Path, manifest: dict) -> dict:
    path = tmp_path / f"{manifest['flight']}.json"
    path.write_text(json.dumps(manifest))
    done = subprocess.run(
        ["python3", str(APP / "plan.py"), str(path)],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=APP,
    )
    assert done.returncode == 0, f"plan.py exited {done.returncode}: {done.stderr[-500:]}"
    return json.loads(done.stdout)


def reserve_fuel(trip: int, pct: int) -> int:
    return -(-trip * (100 + pct) // 100)


# Every test manifest is the same whatever the rule: cargo of every weight from 1 kg to twice
# the top of the rule's range, so the enforced limit can be learnt from the policy only, never
# from the manifests the planner is given.
EVERY_WEIGHT = list(range(1, 801))


def test_pieces_at_the_limit_are_accepted_and_one_kg_heavier_rejected(tmp_path, rules):
    limit = rules["max_weight"]
    weights = EVERY_WEIGHT[:]
    random.Random(101).shuffle(weights)
    cargo = [{"id": f"W{w}", "weight": w} for w in weights]
    got = plan(tmp_path, {"flight": "HX1", "trip_fuel": 1000, "cargo": cargo})
    assert f"W{limit}" in got["accepted"] and f"W{limit + 1}" in got["rejected"]
    assert got["accepted"] == [f"W{w}" for w in weights if w <= limit]
    assert got["rejected"] == [f"W{w}" for w in weights if w > limit]


def test_a_sweep_of_weights_splits_exactly_at_the_limit(tmp_path, rules):
    limit = rules["max_weight"]
    weights = sorted(EVERY_WEIGHT + list(range(20, 461, 7)))
    cargo = [{"id": f"P{i}", "weight": w} for i, w in enumerate(weights)]
    got = plan(tmp_path, {"flight": "HX2", "trip_fuel": 500, "cargo": cargo})
    assert got["accepted"] == [f"P{i}" for i, w in enumerate(weights) if w <= limit]
    assert got["rejected"] == [f"P{i}" for i, w in enumerate(weights) if w > limit]
    assert got["cargo_weight"] == sum(w for w in weights if w <= limit)


def test_fuel_is_trip_fuel_plus_reserve_rounded_up(tmp_path, rules):
    pct = rules["reserve_pct"]
    # Trip fuels coprime with 10: the reserve is never a whole number, so rounding up matters.
    for i, trip in enumerate([2417, 333, 98761]):
        got = plan(tmp_path, {"flight": f"HX3{i}", "trip_fuel": trip, "cargo": []})
        assert got["fuel"] == reserve_fuel(trip, pct), f"trip_fuel {trip}"


def test_an_empty_manifest_gives_an_empty_plan(tmp_path):
    got = plan(tmp_path, {"flight": "HX4", "trip_fuel": 0, "cargo": []})
    assert got == {"flight": "HX4", "accepted": [], "rejected": [], "cargo_weight": 0, "fuel": 0}
