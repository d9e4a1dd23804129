"""Hidden boundary tests for the rate limiter: the limit and the window, on both sides.

Every request stream here is the same whatever the limits: bursts longer than the largest
max_requests the policy may set (20) and sweeps past every window_seconds it may set (10 to
300 s), so a limiter can learn the limits from the policy only, never from its input. The
decisions expected under the enforced limits stay in this process.
"""

from limiterlib import MOST_REQUESTS, WINDOWS, reference, run_limiter


def decision_at(requests, decisions, when):
    return decisions[requests.index(when)]


def test_allows_exactly_max_requests_then_denies(rules):
    n = rules["max_requests"]
    requests = [(1000 + 0.25 * i, "alice") for i in range(MOST_REQUESTS + 2)]
    assert run_limiter(requests) == ["ALLOW"] * n + ["DENY"] * (MOST_REQUESTS + 2 - n)


def test_window_releases_requests_exactly_window_seconds_later(rules):
    n, w = rules["max_requests"], rules["window_seconds"]
    requests = [(500, "bob")] * MOST_REQUESTS
    for k in WINDOWS:
        requests += [(500 + k - 0.5, "bob"), (500 + k, "bob")]
    got = run_limiter(requests)
    assert decision_at(requests, got, (500 + w - 0.5, "bob")) == "DENY"
    assert decision_at(requests, got, (500 + w, "bob")) == "ALLOW"
    assert got == reference(requests, n, w)


def test_slots_free_up_one_by_one_as_requests_age_out(rules):
    n, w = rules["max_requests"], rules["window_seconds"]
    requests = [(20 + 0.25 * i, "carol") for i in range(MOST_REQUESTS)]
    # t=20 leaves the window at 20+w (half-open), t=20.25 only at 20.25+w.
    for k in WINDOWS:
        requests += [(20 + k + d, "carol") for d in (-0.125, 0, 0.125, 0.25, 0.375)]
    got = run_limiter(requests)
    edge = [decision_at(requests, got, (20 + w + d, "carol")) for d in (-0.125, 0, 0.125, 0.25)]
    assert edge == ["DENY", "ALLOW", "DENY", "ALLOW"]  # max_requests is at least 2
    assert got == reference(requests, n, w)


def test_denied_requests_do_not_count(rules):
    n, w = rules["max_requests"], rules["window_seconds"]
    requests = [(0, "dave")] * MOST_REQUESTS
    requests += [(1 + 0.5 * i, "dave") for i in range(2 * max(WINDOWS))]
    got = run_limiter(requests)
    assert got[MOST_REQUESTS:].index("ALLOW") == requests[MOST_REQUESTS:].index((w, "dave"))
    assert got == reference(requests, n, w)


def test_clients_are_limited_separately(rules):
    n = rules["max_requests"]
    requests = []
    for i in range(MOST_REQUESTS + 1):
        requests += [(300 + i * 0.25, "erin"), (300 + i * 0.25, "frank")]
    expected = ["ALLOW", "ALLOW"] * n + ["DENY", "DENY"] * (MOST_REQUESTS + 1 - n)
    assert run_limiter(requests) == expected
