"""Hidden boundary tests for the rate limiter: the limit and the window, on both sides."""

import subprocess

LIMITER = "/app/limiter.py"


def run_limiter(requests):
    stdin = "".join(f"{t} {client}\n" for t, client in requests)
    proc = subprocess.run(
        ["python3", LIMITER], input=stdin, capture_output=True, text=True, timeout=20, cwd="/app"
    )
    assert proc.returncode == 0, f"limiter exited {proc.returncode}: {proc.stderr[-800:]}"
    lines = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == len(requests), f"expected {len(requests)} decisions, got {len(lines)}"
    return lines


def test_allows_exactly_max_requests_then_denies(rules):
    n = rules["max_requests"]
    requests = [(1000 + 0.25 * i, "alice") for i in range(n + 2)]
    assert run_limiter(requests) == ["ALLOW"] * n + ["DENY", "DENY"]


def test_window_releases_requests_exactly_window_seconds_later(rules):
    n, w = rules["max_requests"], rules["window_seconds"]
    requests = [(500, "bob")] * n + [(500 + w - 0.5, "bob"), (500 + w, "bob")]
    assert run_limiter(requests) == ["ALLOW"] * n + ["DENY", "ALLOW"]


def test_slots_free_up_one_by_one_as_requests_age_out(rules):
    n, w = rules["max_requests"], rules["window_seconds"]
    requests = [(20 + 0.25 * i, "carol") for i in range(n)]
    # t=20 leaves the window at 20+w (half-open), t=20.25 only at 20.25+w.
    requests += [(20 + w - 0.125, "carol"), (20 + w, "carol"), (20 + w + 0.125, "carol")]
    requests += [(20 + w + 0.25, "carol")]
    assert run_limiter(requests) == ["ALLOW"] * n + ["DENY", "ALLOW", "DENY", "ALLOW"]


def test_denied_requests_do_not_count(rules):
    n, w = rules["max_requests"], rules["window_seconds"]
    requests = [(0, "dave")] * n
    requests += [(1 + 0.5 * i, "dave") for i in range(2 * (w - 1))]
    requests += [(w, "dave")]
    assert run_limiter(requests) == ["ALLOW"] * n + ["DENY"] * (2 * (w - 1)) + ["ALLOW"]


def test_clients_are_limited_separately(rules):
    n = rules["max_requests"]
    requests = []
    for i in range(n + 1):
        requests += [(300 + i * 0.25, "erin"), (300 + i * 0.25, "frank")]
    expected = ["ALLOW", "ALLOW"] * n + ["DENY", "DENY"]
    assert run_limiter(requests) == expected
