#!/usr/bin/env python3
"""Gateway rate limiter: reads `<timestamp> <client_id>` lines, prints ALLOW or DENY per line."""

import sys


def decide(timestamp: float, client_id: str) -> bool:
    """Return True to allow the request, False to deny it."""
    raise NotImplementedError("rate limit policy not implemented yet")


def main() -> None:
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        timestamp, client_id = float(parts[0]), parts[1]
        print("ALLOW" if decide(timestamp, client_id) else "DENY")


if __name__ == "__main__":
    main()
