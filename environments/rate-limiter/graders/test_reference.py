"""Hidden tests: the limiter agrees with a reference sliding-window limiter on unseen streams."""

import random
import subprocess
from collections import defaultdict, deque

LIMITER = "/app/limiter.py"


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
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


def stream(seed, max_requests, window_seconds, length=600):
    """Bursty traffic from a few clients; timestamps are multiples of 1/8 s (exact floats)."""
    rng = random.Random(seed)
    clients = ["api-key-1", "api-key-2", "mobile", "batch-7"]
    t = 0.0
    requests = []
    client = clients[0]
    while len(requests) < length:
        if rng.random() < 0.3:
            # Come back right at the edge of the window, usually as the same client.
            t += rng.choice([window_seconds - 0.125, window_seconds, window_seconds + 0.125])
            client = client if rng.random() < 0.7 else rng.choice(clients)
        else:
            t += rng.randint(0, 8) / 8
            client = rng.choice(clients)
        burst = rng.randint(1, max_requests + 2)
        requests += [(t, client)] * burst
    return requests[:length]


def check(seed, rules):
    n, w = rules["max_requests"], rules["window_seconds"]
    requests = stream(seed, n, w)
    expected = reference(requests, n, w)
    got = run_limiter(requests)
    assert len(got) == len(expected), f"expected {len(expected)} decisions, got {len(got)}"
    first = next((i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b), None)
    assert first is None, (
        f"decision {first} for {requests[first]} was {got[first]}, expected {expected[first]}"
    )


def test_matches_reference_on_bursty_stream(rules):
    check(7, rules)


def test_matches_reference_on_second_stream(rules):
    check(1234, rules)


def test_burst_at_one_instant_is_cut_at_the_limit(rules):
    n = rules["max_requests"]
    got = run_limiter([(42.0, "solo")] * (n + 1) + [(42.0, "other")])
    assert got == ["ALLOW"] * n + ["DENY", "ALLOW"]


def test_full_client_gets_a_slot_back_exactly_one_window_later(rules):
    n, w = rules["max_requests"], rules["window_seconds"]
    requests = [(7.5, "edge")] * n + [(7.5 + w - 0.125, "edge"), (7.5 + w, "edge")]
    assert run_limiter(requests) == ["ALLOW"] * n + ["DENY", "ALLOW"]
