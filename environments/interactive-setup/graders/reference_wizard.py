#!/usr/bin/env python3
"""Reference copy of the ingestd setup wizard (hidden; the same as files/setup_wizard.py).

The replay test runs this copy, not the one in the agent's workspace.
"""

import argparse
import hashlib
import json
import re
import sys

VERSION = "2.3.1"
MODES = ("standalone", "cluster")
LOG_LEVELS = ("debug", "info", "warning", "error")


def ask(prompt, default=None, check=None):
    """Ask until the answer passes `check` (which returns the parsed value or raises ValueError)."""
    suffix = f" [{default}]" if default is not None else ""
    while True:
        try:
            answer = input(f"{prompt}{suffix}: ").strip()
        except EOFError:
            print("\nsetup aborted: no more input", file=sys.stderr)
            sys.exit(1)
        if not answer and default is not None:
            answer = str(default)
        try:
            return check(answer) if check else answer
        except ValueError as exc:
            print(f"  invalid answer: {exc}")


def choice(options):
    def check(answer):
        if answer.lower() not in options:
            raise ValueError(f"expected one of {', '.join(options)}")
        return answer.lower()
    return check


def int_between(low, high):
    def check(answer):
        if not re.fullmatch(r"\d+", answer) or not low <= int(answer) <= high:
            raise ValueError(f"expected a whole number from {low} to {high}")
        return int(answer)
    return check


def seeds(answer):
    nodes = [n.strip() for n in answer.split(",") if n.strip()]
    if not nodes:
        raise ValueError("expected at least one host:port")
    for node in nodes:
        if not re.fullmatch(r"[A-Za-z0-9.-]+:\d{1,5}", node):
            raise ValueError(f"{node!r} is not host:port")
    return nodes


def absolute_path(answer):
    if not answer.startswith("/"):
        raise ValueError("expected an absolute path")
    return answer.rstrip("/") or "/"


def yes_no(answer):
    if answer.lower() in ("y", "yes"):
        return True
    if answer.lower() in ("n", "no"):
        return False
    raise ValueError("expected y or n")


def checksum(config):
    body = {k: v for k, v in config.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", default="/app/config.json", help="where to write the config")
    args = parser.parse_args()

    print(f"ingestd setup wizard {VERSION}")
    print("Press Enter to keep the value in [brackets].\n")
    config = {"generated_by": f"setup_wizard {VERSION}"}
    config["mode"] = ask("Install mode (standalone/cluster)", "standalone", choice(MODES))
    if config["mode"] == "cluster":
        config["seeds"] = ask("Seed nodes, comma-separated host:port", None, seeds)
    else:
        config["seeds"] = []
    config["workers"] = ask("Number of worker threads (1-64)", 4, int_between(1, 64))
    config["listen"] = {
        "host": "0.0.0.0",
        "port": ask("Listen port (1024-65535)", 7000, int_between(1024, 65535)),
    }
    config["data_dir"] = ask("Data directory", "/var/lib/ingestd", absolute_path)
    config["log_level"] = ask("Log level (debug/info/warning/error)", "info", choice(LOG_LEVELS))
    config["telemetry"] = ask("Send anonymous usage telemetry? (y/n)", "y", yes_no)
    config["checksum"] = checksum(config)

    print("\nSummary:")
    print(json.dumps(config, indent=2))
    if not ask(f"Write {args.output}? (y/n)", "n", yes_no):
        print("nothing written")
        return 1
    with open(args.output, "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
