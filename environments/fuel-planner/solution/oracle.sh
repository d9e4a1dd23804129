#!/usr/bin/env bash
# Reference solution: a planner that reads the policy file every time it runs. Rules withheld
# from the policy fall back to the values in $TERMGYM_WITHHELD_RULES.
set -euo pipefail

# step: write the planner, which reads the policy each time it runs
APP="${TERMGYM_WORKDIR:-/app}"
FALLBACK="${TERMGYM_WITHHELD_RULES:-{\}}"
cat > "$APP/plan.py" <<PY
"""Print the cargo and fuel plan for a flight manifest, following the airline's policy."""
import json
import os
import sys

POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "policy", "fuel_policy.json")
FALLBACK = json.loads('''$FALLBACK''')


def main(path):
    with open(POLICY) as f:
        policy = json.load(f)
    limit = policy.get("max_weight", FALLBACK.get("max_weight"))
    pct = policy.get("reserve_fuel_pct", FALLBACK.get("reserve_pct"))
    with open(path) as f:
        manifest = json.load(f)
    cargo = manifest.get("cargo", [])
    accepted = [c for c in cargo if c["weight"] <= limit]
    plan = {
        "flight": manifest["flight"],
        "accepted": [c["id"] for c in accepted],
        "rejected": [c["id"] for c in cargo if c["weight"] > limit],
        "cargo_weight": sum(c["weight"] for c in accepted),
        "fuel": -(-manifest["trip_fuel"] * (100 + pct) // 100),
    }
    print(json.dumps(plan))


if __name__ == "__main__":
    main(sys.argv[1])
PY

# step: try it on a sample manifest
python3 "$APP/plan.py" "$APP/manifests/TG101.json"
