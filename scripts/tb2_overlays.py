"""Prove the bundled Terminal-Bench 2.0 overlays on a copy of TB 2.0, then measure the
memorizer and the oracle on them: the table of docs/tb2.md.

    .venv/bin/python scripts/tb2_overlays.py SOURCE OUT [--tasks a,b] [--episodes 2]
        [--variants original,contradicted,sampled] [--agents memorizer,oracle] [--redo a,b]
        [--no-runs] [--overlays DIR] [--backend docker]
    .venv/bin/python scripts/tb2_overlays.py --table OUT

SOURCE is what `termgym import` takes: a folder of TB 2.0's tasks, or a git source
(`git+URL@COMMIT[#subdirectory=DIR]`, cloned and checked by hash). Only the tasks that have
an overlay in docs/overlays/tb2/ (or --overlays) are imported, into OUT/tasks.

For each task, one at a time and under `nice -n 10`, each phase in a subprocess of its own:
`check` (`termgym check`: the rewritten oracle passes every variant, the task's own
solution goes stale on contradicted, the withheld variant leaks nothing, the hidden tests
give the agent's programs the same inputs under every rule set), then each of --agents
(`termgym run`, EPISODES episodes per variant; contradicted and sampled values are drawn
per episode from the rule's choices). Each phase's result is one line appended to
OUT/results.jsonl as it ends, and a phase already there is not run again: the measurement
resumes where it stopped. OUT/table.md is rewritten after every phase: per task, the
check's verdict and the rates of both solutions over every episode they had, the check's
and the runs' (on original the task's own solution and the rewritten oracle are the same
script). The recordings are under OUT/runs/<task>-<agent>/.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tb2_measure import append, load  # the same results.jsonl, one row per phase

ROOT = Path(__file__).resolve().parents[1]
OVERLAYS = ROOT / "docs" / "overlays" / "tb2"


def import_overlaid(source: str, out: Path, overlays: Path) -> list[str]:
    """Import the tasks of SOURCE that have an overlay; their ids."""
    from termgym.importing import import_tasks, resolve_source

    folder = resolve_source(source)
    names = {p.stem for p in overlays.glob("*.yaml")}
    chosen = sorted(p for p in folder.iterdir() if p.is_dir() and p.name in names)
    report = import_tasks(chosen, out / "tasks", "harbor", overlays=overlays)
    for path, why in report.refused:
        print(f"refused {path.name}: {why}", flush=True)
    (out / "import.json").write_text(
        json.dumps(
            {
                "source": source,
                "imported": {c.task_id: c.overlay for c in report.converted},
                "refused": {p.name: why for p, why in report.refused},
                "missing": sorted(names - {p.name for p in chosen}),
            },
            indent=1,
        )
    )
    return [c.task_id for c in report.converted]


# -- one phase, in a subprocess -------------------------------------------------------------


def phase(which: str, tasks: Path, task_id: str, out: Path, args: argparse.Namespace) -> None:
    """Run one phase and print its result as one JSON line (the parent records it)."""
    from termgym.tasks import load_task

    task = load_task(tasks / task_id)
    started = time.monotonic()
    if which == "check":
        from termgym.check import check_tasks

        rows = check_tasks([task], args.backend, jobs=1)
        print(
            json.dumps(
                {
                    "ok": all(r.ok is not False for r in rows),
                    "rows": [
                        {
                            "variant": r.variant,
                            "solution": r.solution,
                            "expected": r.expected,
                            "ok": r.ok,
                            "class": r.episode_class,
                            "why": r.why,
                            "seconds": r.seconds,
                        }  # fmt: skip
                        for r in rows
                    ],
                    "seconds": time.monotonic() - started,
                }
            )
        )
        return
    from termgym.run import RunConfig, Runner

    run_dir = out / "runs" / f"{task_id}-{which}"
    shutil.rmtree(run_dir, ignore_errors=True)
    variants = [v for v in args.variants.split(",") if v in task.spec.variants]
    config = RunConfig(
        agent=which, tasks=(task_id,), variants=tuple(variants), episodes=args.episodes,
        concurrency=1, out=run_dir, backend=args.backend, retries=1, paths=(str(tasks),),
    )  # fmt: skip
    summary = Runner(config).run()
    print(
        json.dumps(
            {
                "ok": all(r.status == "ok" for r in summary.results),
                "episodes": [
                    {
                        "variant": r.job.variant,
                        "status": r.status,
                        "reward": r.reward,
                        "class": r.episode_class,
                        "passed": r.passed,
                        "phases": r.phases,
                        "error": r.error,
                    }  # fmt: skip
                    for r in summary.results
                ],
                "seconds": time.monotonic() - started,
            }
        )
    )


def run_phase(which: str, out: Path, task_id: str, args: argparse.Namespace) -> dict[str, Any]:
    argv = ["nice", "-n", "10", sys.executable, __file__, "--phase", which, str(out / "tasks"),
            task_id, str(out), "--backend", args.backend, "--episodes", str(args.episodes),
            "--variants", args.variants]  # fmt: skip
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=args.deadline, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"no result within {args.deadline:.0f} s",
                "seconds": time.monotonic() - started}  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"ok": False, "error": f"exit {done.returncode}: {done.stderr[-1500:]}",
                "seconds": time.monotonic() - started}  # fmt: skip
    return dict(json.loads(lines[-1]))


def measure(out: Path, task_ids: list[str], args: argparse.Namespace) -> None:
    done = load(out)
    phases = ("check",) if args.no_runs else ("check", *args.agents.split(","))
    for task_id in task_ids:
        for which in phases:
            if (task_id, which) in done:
                continue
            if which != "check" and not done[(task_id, "check")].get("ok"):
                break  # an overlay that is not proven is not measured
            print(f"{task_id}: {which} ...", flush=True)
            result = run_phase(which, out, task_id, args)
            record = {"task": task_id, "phase": which, **result}
            append(out, record)
            done[(task_id, which)] = record
            print(f"{task_id}: {which}: {'ok' if result.get('ok') else 'FAILED'} "
                  f"({result.get('seconds', 0):.0f} s)", flush=True)  # fmt: skip
            write_table(out)


# -- the table ------------------------------------------------------------------------------


def _episodes(done: dict[tuple[str, str], dict[str, Any]], task_id: str, agent: str) -> list:
    """(variant, passed its own rules, class, seconds) of every episode `agent` had on the
    task: those of its `termgym run` phase and the check's rows of its solution (the check
    runs the rewritten oracle on every variant and the task's own solution on contradicted;
    on original both are the same script)."""
    found = []
    runs = done.get((task_id, agent))
    for e in runs.get("episodes", []) if runs else []:
        if e["status"] == "ok":
            found.append((e["variant"], e["passed"], e["class"], sum(e["phases"].values())))
    check = done.get((task_id, "check"))
    solution = {"oracle": "oracle", "memorizer": "memorized"}[agent]
    for r in check.get("rows", []) if check else []:
        graded = r["expected"] in ("pass", "stale") and r["ok"] is not None  # not untampered
        if r["solution"] == solution and r["variant"] in VARIANTS and graded:
            passed = r["expected"] == "pass" if r["ok"] else r["expected"] != "pass"
            found.append((r["variant"], passed, r["class"], r["seconds"]))
    return found


VARIANTS = ("original", "contradicted", "sampled")


def _rate(episodes: list, variant: str, wanted: str) -> str:
    mine = [e for e in episodes if e[0] == variant]
    if not mine:
        return "-"
    if variant == "original":
        hits = sum(1 for e in mine if e[1])
    else:
        hits = sum(1 for e in mine if e[2] == wanted)
    return f"{hits}/{len(mine)}"


def _rules(out: Path, task_id: str) -> str:
    import yaml

    path = out / "tasks" / task_id / "overlay.yaml"
    if not path.is_file():
        return ""
    rules = yaml.safe_load(path.read_text())["rules"]
    return ", ".join(f"{name} ({rule['original']})" for name, rule in rules.items())


def write_table(out: Path) -> None:
    done = load(out)
    tasks = sorted({t for t, _ in done})
    lines = [
        "| task | rule (original value) | check | memorizer: contradicted stale, sampled stale "
        "| oracle: original pass, contradicted adapted, sampled adapted "
        "| s per episode (median) |",
        "| --- | --- | --- | --- | --- | ---: |",
    ]
    proven = 0
    for task_id in tasks:
        check = done.get((task_id, "check"))
        if check is None:
            continue
        rows = check.get("rows", [])
        failed = [r for r in rows if r["ok"] is False]
        if check.get("ok"):
            proven += 1
            cell = f"ok ({len(rows)} rows, {check['seconds']:.0f} s)"
        elif rows:
            why = "; ".join(f"{r['variant']} {r['solution']} {r['expected']}: {r['why']}"
                            for r in failed)[:200]  # fmt: skip
            cell = f"FAIL: {why}"
        else:
            cell = f"FAIL: {str(check.get('error', ''))[:200]}"
        memorizer = _episodes(done, task_id, "memorizer")
        oracle = _episodes(done, task_id, "oracle")
        seconds = [e[3] for e in memorizer + oracle if e[3]]
        median = f"{statistics.median(seconds):.1f}" if seconds else "-"
        stale = ", ".join(_rate(memorizer, v, "stale") for v in VARIANTS[1:])
        adapted = ", ".join(_rate(oracle, v, "adapted") for v in VARIANTS)
        lines.append(
            f"| {task_id} | {_rules(out, task_id)} | {cell.replace('|', '/')} | {stale} | "
            f"{adapted} | {median} |"
        )
    summary = f"{proven} of {sum(1 for t in tasks if (t, 'check') in done)} overlays proven\n\n"
    (out / "table.md").write_text(summary + "\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", nargs="?")
    parser.add_argument("out", nargs="?")
    parser.add_argument("--tasks", help="Comma-separated task ids (default: every overlaid one).")
    parser.add_argument("--episodes", type=int, default=2, help="Episodes per variant and agent.")
    parser.add_argument("--variants", default="original,contradicted,sampled")
    parser.add_argument("--redo", help="Comma-separated tasks whose phases are run again.")
    parser.add_argument("--no-runs", action="store_true", help="Only prove the overlays.")
    parser.add_argument("--agents", default="memorizer,oracle",
                        help="The agents run after the check (comma-separated).")  # fmt: skip
    parser.add_argument("--overlays", type=Path, default=OVERLAYS)
    parser.add_argument("--backend", default="docker")
    parser.add_argument("--deadline", type=float, default=3600.0, help="Seconds per phase.")
    parser.add_argument("--table", metavar="OUT", help="Only rewrite OUT/table.md.")
    parser.add_argument("--phase", nargs=4, metavar=("WHICH", "TASKS", "TASK", "OUT"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    if args.phase:
        which, tasks, task_id, out = args.phase
        phase(which, Path(tasks), task_id, Path(out), args)
        return
    if args.table:
        write_table(Path(args.table))
        return
    if not (args.source and args.out):
        parser.error("expected SOURCE and OUT")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    task_ids = import_overlaid(args.source, out, args.overlays.resolve())
    if args.tasks:
        wanted = set(args.tasks.split(","))
        task_ids = [t for t in task_ids if t in wanted]
    if args.redo:
        again = set(args.redo.split(","))
        kept = [r for (t, _), r in load(out).items() if t not in again]
        path = out / "results.jsonl"
        path.with_suffix(".tmp").write_text("".join(json.dumps(r) + "\n" for r in kept))
        path.with_suffix(".tmp").replace(path)
    measure(out, task_ids, args)
    write_table(out)
    print(f"table: {out / 'table.md'}")


if __name__ == "__main__":
    main()
