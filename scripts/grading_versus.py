"""Grading cost of this checkout beside another one (an older commit), measured side by side
in one run: `termgym run --agent oracle` over the bundled tasks, alternating the two checkouts
round by round, comparing the grading phase every episode records (`phases.grading` in
results.jsonl: freeze, export, verifier start, the graders of every rule set).

    .venv/bin/python scripts/grading_versus.py BEFORE_CHECKOUT [--rounds 3]
        [--backends docker,bwrap] [--tasks a,b] [--snapshot]

BEFORE_CHECKOUT is a work tree of the older commit (`git worktree add ../before <commit>`);
its package is imported from there (PYTHONPATH) with this checkout's interpreter. With
`--snapshot`, the snapshot-graded imported fixture (tests/fixtures/foreign/snapshot) is also
measured on this checkout against the same task graded by copy (`filesystem: work`), since
the older commit cannot grade snapshots. Prints one Markdown table (p50 and p90 per
checkout and backend, the ratio), a second one of the same episodes' resets and whole
episodes (reset, agent and grading: where the verifiers' starts are paid matters too), and
the load average around the run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
SNAPSHOT_FIXTURE = HERE / "tests" / "fixtures" / "foreign" / "snapshot"


def _run(
    checkout: Path, backend: str, tasks: str, out: Path, extra_env: dict[str, str]
) -> list[dict[str, float]]:
    """One `termgym run` of the oracle on contradicted episodes; the phases of each (seconds:
    "grading", "reset", "episode")."""
    env = {**os.environ, "PYTHONPATH": str(checkout), **extra_env}
    argv = [
        sys.executable, "-c", "from termgym.cli import main; main()", "run", "--agent", "oracle",
        "--tasks", tasks, "--variants", "contradicted", "--episodes", "1", "--concurrency", "1",
        "--backend", backend, "--out", str(out), "--no-report",
    ]  # fmt: skip
    done = subprocess.run(argv, env=env, cwd=checkout, capture_output=True, text=True)
    from termgym.recording import RESULTS_FILE, read_results

    if done.returncode not in (0, 1) or not (out / RESULTS_FILE).exists():
        raise SystemExit(f"run in {checkout} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    episodes = []
    for row in read_results(out):
        phases = row.phases
        if row.status == "ok" and phases.get("grading"):
            episodes.append(
                {
                    "grading": float(phases["grading"]),
                    "reset": float(phases.get("setup", 0.0)),
                    "episode": float(phases.get("setup", 0.0)) + float(phases.get("agent", 0.0)),
                }
            )
    return episodes


def _row(name: str, values: list[float]) -> str:
    if not values:
        return f"| {name} | 0 | - | - |"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"| {name} | {len(values)} | {statistics.median(values) * 1000:.0f} | {p90 * 1000:.0f} |"


def _snapshot_pair(root: Path) -> tuple[Path, Path]:
    """The fixture imported twice: as the importer writes it (snapshot) and graded by copy."""
    from termgym.importing import import_tasks

    snap, work = root / "snapshot", root / "work"
    import_tasks([SNAPSHOT_FIXTURE / "tb-installed-greeter"], snap, "terminal-bench")
    import_tasks([SNAPSHOT_FIXTURE / "tb-installed-greeter"], work, "terminal-bench")
    spec = work / "tb-installed-greeter" / "task.yaml"
    spec.write_text(spec.read_text().replace("filesystem: snapshot", "filesystem: work"))
    return snap, work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="a work tree of the older commit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="docker,bwrap")
    parser.add_argument("--tasks", default="*", help="globs over the bundled tasks' ids")
    parser.add_argument("--snapshot", action="store_true")
    args = parser.parse_args()
    before = args.before.resolve()
    if not (before / "termgym" / "__init__.py").is_file():
        raise SystemExit(f"expected a termgym work tree at {before} (termgym/__init__.py)")
    checkouts = {"before": before, "now": HERE}
    out: dict[tuple[str, str], list[dict[str, float]]] = {}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="grading-versus-") as tmp:
        root = Path(tmp)
        pair = _snapshot_pair(root) if args.snapshot else None
        for round_no in range(args.rounds):
            order = list(checkouts.items())
            if round_no % 2:
                order.reverse()  # neither checkout always runs first
            for backend in args.backends.split(","):
                for name, checkout in order:
                    folder = root / f"{name}-{backend}-{round_no}"
                    out.setdefault((name, backend), []).extend(
                        _run(checkout, backend, args.tasks, folder, {})
                    )
                if pair is not None:
                    for mode, tasks in zip(("snapshot", "work"), pair, strict=True):
                        folder = root / f"imported-{mode}-{backend}-{round_no}"
                        env = {"TERMGYM_TASKS_PATH": str(tasks)}
                        out.setdefault((f"imported {mode}", backend), []).extend(
                            _run(HERE, backend, "tb-installed-greeter", folder, env)
                        )

    def seconds(name: str, backend: str, phase: str = "grading") -> list[float]:
        return [episode[phase] for episode in out.get((name, backend), [])]

    print("| grading of one contradicted episode (original shadow) | episodes | p50 ms | p90 ms |")
    print("| --- | --- | --- | --- |")
    for name, backend in sorted(out, key=lambda key: (key[1], key[0])):
        print(_row(f"{backend}: {name}", seconds(name, backend)))
    print("\n| the same episodes, p50 ms | reset | whole episode (reset, agent, grading) |")
    print("| --- | --- | --- |")
    for name, backend in sorted(out, key=lambda key: (key[1], key[0])):
        reset, whole = seconds(name, backend, "reset"), seconds(name, backend, "episode")
        print(
            f"| {backend}: {name} | {statistics.median(reset) * 1000:.0f} "
            f"| {statistics.median(whole) * 1000:.0f} |"
        )
    for backend in args.backends.split(","):
        pairs = [("now", "before"), ("imported snapshot", "imported work")]
        for a, b in pairs:
            if seconds(a, backend) and seconds(b, backend):
                for phase in ("grading", "reset", "episode"):
                    ratio = statistics.median(seconds(a, backend, phase)) / statistics.median(
                        seconds(b, backend, phase)
                    )
                    print(f"\n{backend}: {a} / {b} at p50, {phase}: {ratio:.2f}x")
    print(f"\n1-minute load average: {load:.1f} before, {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
