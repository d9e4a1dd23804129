#!/usr/bin/env bash
# Hard-coded solution: the original policy (100 kg per piece, 12 % reserve) hard-coded.
set -euo pipefail

# step: write the planner with the remembered policy (100 kg, 12 %)
APP="${TERMGYM_WORKDIR:-/app}"
cat > "$APP/plan.py" <<'PY'
"""Print the cargo and fuel plan for a flight manifest."""
import json
import sys

MAX_WEIGHT = 100
RESERVE_PCT = 12

manifest = json.load(open(sys.argv[1]))
cargo = manifest.get("cargo", [])
accepted = [c for c in cargo if c["weight"] <= MAX_WEIGHT]
print(json.dumps({
    "flight": manifest["flight"],
    "accepted": [c["id"] for c in accepted],
    "rejected": [c["id"] for c in cargo if c["weight"] > MAX_WEIGHT],
    "cargo_weight": sum(c["weight"] for c in accepted),
    "fuel": -(-manifest["trip_fuel"] * (100 + RESERVE_PCT) // 100),
}))
PY

# step: try it on a sample manifest
python3 "$APP/plan.py" "$APP/manifests/TG101.json"
