#!/usr/bin/env bash
# Reference solution: reads the limits from policy/limits.toml (withheld ones from
# $TERMGYM_WITHHELD_RULES) and writes a sliding-window limiter with those limits.
set -euo pipefail

# step: take the limits policy/limits.toml states
cd /app
read -r MAX WINDOW < <(python3 - <<'PY'
import json, os, tomllib
with open("/app/policy/limits.toml", "rb") as f:
    limits = tomllib.load(f).get("limits", {})
withheld = json.loads(os.environ.get("TERMGYM_WITHHELD_RULES") or "{}")
print(limits.get("max_requests", withheld.get("max_requests")),
      limits.get("window_seconds", withheld.get("window_seconds")))
PY
)

# step: write the limiter with them
cat > /app/limiter.py <<PY
#!/usr/bin/env python3
"""Gateway rate limiter: reads \`<timestamp> <client_id>\` lines, prints ALLOW or DENY per line."""

import sys
from collections import defaultdict, deque

MAX_REQUESTS = ${MAX}
WINDOW_SECONDS = ${WINDOW}

_allowed = defaultdict(deque)


def decide(timestamp: float, client_id: str) -> bool:
    """Return True to allow the request, False to deny it."""
    recent = _allowed[client_id]
    while recent and recent[0] <= timestamp - WINDOW_SECONDS:
        recent.popleft()
    if len(recent) < MAX_REQUESTS:
        recent.append(timestamp)
        return True
    return False


def main() -> None:
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        timestamp, client_id = float(parts[0]), parts[1]
        print("ALLOW" if decide(timestamp, client_id) else "DENY")


if __name__ == "__main__":
    main()
PY
