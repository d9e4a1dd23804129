"""Hidden checks (pool alternative): whole plans for seeded random manifests, run from elsewhere."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))


def expected(manifest: dict, rules: dict) -> dict:
    limit, pct = rules["max_weight"], rules["reserve_pct"]
    ok = [c for c in manifest["cargo"] if c["weight"] <= limit]
    return {
        "flight": manifest["flight"],
        "accepted": [c["id"] for c in ok],
        "rejected": [c["id"] for c in manifest["cargo"] if c["weight"] > limit],
        "cargo_weight": sum(c["weight"] for c in ok),
        "fuel": -(-manifest["trip_fuel"] * (100 + pct) // 100),
    }


def test_random_manifests_get_exactly_the_policy_plan(tmp_path, rules):
    rng = random.Random(7)
    for n in range(4):
        # Every weight across the rule's range is in every manifest, whatever the rule: the
        # limit cannot be read off the manifests, only off the policy.
        weights = [rng.randint(1, 450) for _ in range(30)] + list(range(55, 406))
        rng.shuffle(weights)
        manifest = {
            "flight": f"RX{n}",
            "trip_fuel": rng.randrange(101, 20000, 10) + rng.choice([0, 2, 6, 8]),
            "cargo": [{"id": f"R{n}-{i}", "weight": w} for i, w in enumerate(weights)],
        }
        path = tmp_path / f"m{n}.json"
        text = json.dumps(manifest, indent=2)
        path.write_text(text)
        done = subprocess.run(
            ["python3", str(APP / "plan.py"), str(path)],
            capture_output=True,
            text=True,
            timeout=20,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-500:]
        assert json.loads(done.stdout) == expected(manifest, rules)
        assert path.read_text() == text, "plan.py must not modify the manifest"
