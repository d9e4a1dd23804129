"""What both hidden test files share: the limiter under test, the limits' ranges, a reference
sliding-window limiter, and running the agent's limiter on a request stream."""

import subprocess
from collections import defaultdict, deque

LIMITER = "/app/limiter.py"
MOST_REQUESTS = 20  # the top of max_requests' range
WINDOWS = range(10, 301)  # every window_seconds the policy may set


def reference(requests, max_requests, window_seconds):
    allowed = defaultdict(deque)
    decisions = []
    for t, client in requests:
        recent = allowed[client]
        while recent and recent[0] <= t - window_seconds:
            recent.popleft()
        if len(recent) < max_requests:
            recent.append(t)
            decisions.append("ALLOW")
        else:
            decisions.append("DENY")
    return decisions


def run_limiter(requests):
    stdin = "".join(f"{t} {client}\n" for t, client in requests)
    proc = subprocess.run(
        ["python3", LIMITER], input=stdin, capture_output=True, text=True, timeout=20, cwd="/app"
    )
    assert proc.returncode == 0, f"limiter exited {proc.returncode}: {proc.stderr[-800:]}"
    lines = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == len(requests), f"expected {len(requests)} decisions, got {len(lines)}"
    return lines
