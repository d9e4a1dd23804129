"""Hidden tests: the limiter agrees with a reference sliding-window limiter on unseen streams.

The streams are the same whatever the limits (bursts up to past the largest max_requests,
returns after any window_seconds the policy may set), so the limits cannot be read off
them; only the expected decisions depend on the limits, and they stay in this process.
"""

import random

from limiterlib import MOST_REQUESTS, WINDOWS, reference, run_limiter


def stream(seed, length=2000):
    """Bursty traffic from a few clients; timestamps are multiples of 1/8 s (exact floats)."""
    rng = random.Random(seed)
    clients = ["api-key-1", "api-key-2", "mobile", "batch-7"]
    t = 0.0
    requests = []
    client = clients[0]
    while len(requests) < length:
        if rng.random() < 0.3:
            # Come back after a window's length (any the policy may set), around its edge,
            # usually as the same client.
            t += rng.choice(WINDOWS) + rng.choice([-0.125, 0, 0.125])
            client = client if rng.random() < 0.7 else rng.choice(clients)
        else:
            t += rng.randint(0, 8) / 8
            client = rng.choice(clients)
        burst = rng.randint(1, MOST_REQUESTS + 2)
        requests += [(t, client)] * burst
    return requests[:length]


def check(seed, rules):
    n, w = rules["max_requests"], rules["window_seconds"]
    requests = stream(seed)
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
    got = run_limiter([(42.0, "solo")] * (MOST_REQUESTS + 1) + [(42.0, "other")])
    assert got == ["ALLOW"] * n + ["DENY"] * (MOST_REQUESTS + 1 - n) + ["ALLOW"]


def test_full_client_gets_a_slot_back_exactly_one_window_later(rules):
    n, w = rules["max_requests"], rules["window_seconds"]
    requests = [(7.5, "edge")] * MOST_REQUESTS
    for k in WINDOWS:
        requests += [(7.5 + k - 0.125, "edge"), (7.5 + k, "edge")]
    got = run_limiter(requests)
    assert got[requests.index((7.5 + w - 0.125, "edge"))] == "DENY"
    assert got[requests.index((7.5 + w, "edge"))] == "ALLOW"
    assert got == reference(requests, n, w)
