"""termgym's own step (`env.step(command)`, what termgym's agents pay per command) in this
checkout beside another one (an older commit), measured side by side in one run: the
checkouts alternate round by round, each round a fresh process per checkout and backend
timing the same commands in one episode.

    .venv/bin/python scripts/steps_versus.py BEFORE_CHECKOUT [--rounds 4] [--steps 50]
        [--backends docker,bwrap]

BEFORE_CHECKOUT is a work tree of the older commit (`git worktree add ../before <commit>`);
its package is imported from there (PYTHONPATH) with this checkout's interpreter. Prints a
Markdown table (p50 and p90 per checkout and backend), the ratios, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
COMMANDS = (
    "true",
    "echo hi",
    "tmux has-session -t bench",
    "tmux capture-pane -p -t bench",
    "tmux send-keys -t bench -- 'echo hi' Enter",
)
CHILD = """
import json, sys, time, termgym
env = termgym.make("fuel-planner", backend=sys.argv[1], shadow=False, pool_size=0,
                   max_steps=10**6)
env.reset(seed=0)
env.step("tmux new-session -x 160 -y 40 -d -s bench 'bash --login'")
times = {c: [] for c in json.loads(sys.argv[3])}
for _ in range(int(sys.argv[2])):
    for command in times:
        began = time.perf_counter()
        env.step(command)
        times[command].append(time.perf_counter() - began)
env.close()
print(json.dumps(times))
"""


def _round(checkout: Path, backend: str, steps: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    argv = [sys.executable, "-c", CHILD, backend, str(steps), json.dumps(COMMANDS)]
    done = subprocess.run(argv, env=env, cwd=checkout, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"steps in {checkout} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="a work tree of the older commit")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=50, help="rounds of the commands per run")
    parser.add_argument("--backends", default="docker,bwrap")
    args = parser.parse_args()
    before = args.before.resolve()
    if not (before / "termgym" / "__init__.py").is_file():
        raise SystemExit(f"expected a termgym work tree at {before} (termgym/__init__.py)")
    checkouts = {"before": before, "now": HERE}
    found: dict[tuple[str, str], dict[str, list[float]]] = {}
    load = os.getloadavg()[0]
    for round_no in range(args.rounds):
        order = list(checkouts.items())
        if round_no % 2:
            order.reverse()  # neither checkout always runs first
        for backend in args.backends.split(","):
            for name, checkout in order:
                for command, times in _round(checkout, backend, args.steps).items():
                    found.setdefault((name, backend), {}).setdefault(command, []).extend(times)
    print("| env.step | checkout | steps | p50 ms | p90 ms |")
    print("| --- | --- | ---: | ---: | ---: |")
    for backend in args.backends.split(","):
        for command in COMMANDS:
            for name in checkouts:
                times = found[(name, backend)][command]
                print(f"| {backend}: `{command}` | {name} | {len(times)} | "
                      f"{_ms(times, 0.5):.3f} | {_ms(times, 0.9):.3f} |")  # fmt: skip
    print()
    for backend in args.backends.split(","):
        now = [t for times in found[("now", backend)].values() for t in times]
        then = [t for times in found[("before", backend)].values() for t in times]
        ratio = statistics.median(now) / statistics.median(then)
        print(f"{backend}: now / before at p50, every command: {ratio:.3f}x")
    print(f"\n1-minute load average: {load:.1f} before, {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
