#!/usr/bin/env bash
# Hard-coded solution: the original limits (5 requests per 60 s) hard-coded,
# whatever policy/limits.toml now says.
set -euo pipefail

# step: write the limiter with the remembered limits (5 per 60 s)
cd /app
MAX=5
WINDOW=60
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
