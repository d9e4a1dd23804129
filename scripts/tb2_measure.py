"""Measure Terminal-Bench 2.0 (or any folder of Harbor tasks) under termgym: import every
task, then build each imported task's image, run its own solution (the oracle) and a
do-nothing agent through `termgym run`, and write one table (docs/importing.md, "TB 2.0").

    .venv/bin/python scripts/tb2_measure.py SOURCE OUT [--tasks a,b | --sample N]
        [--import-only] [--runnable] [--redo a,b|failed] [--backend docker] [--build-timeout S]
        [--max-agent-timeout S] [--drop-images]
    .venv/bin/python scripts/tb2_measure.py --table OUT

SOURCE is a folder of Harbor task folders (a checkout of a public copy: termgym vendors
none), or a bare git repository and the folder in it, `REPO.git:terminal-bench-2`, whose
blobs missing from the snapshot are left out (the importer then says what is missing).

Unattended and resumable: every phase of every task (build, oracle, nothing) is one line
appended to OUT/results.jsonl as soon as it ends, and a phase already recorded is not run
again; each phase runs in a subprocess under a wall-clock deadline (the task's own agent
and verifier timeouts plus the build's), one at a time, under `nice -n 10`. OUT/table.md is
rewritten after every phase. Runs live under OUT/runs/<task>-<agent>/ (recordings, as
`termgym run` writes them: read the failing ones there).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NETWORK_REGISTRIES = re.compile(
    r"\b(apt(-get)?\s+(-\S+\s+)*install|pip3?\s+install|python3?\s+-m\s+pip\s+install|uv\s+(pip\s+"
    r"install|add|sync|run)|uvx\s|npm\s+(install|i)\b|cargo\s+(install|build)|opam\s+install|"
    r"conda\s+install|gem\s+install|go\s+(get|install|mod))"
)
"""A solution that installs from a package registry (PyPI, Debian, npm ...): reachable
from this project's machines (only the registries are)."""
NETWORK_OTHER = re.compile(
    r"\b(git\s+clone\s+\S*(https?://|git@)|(wget|curl)\s+[^|;\n]*https?://(?!localhost|127\.)|"
    r"huggingface-cli|hf_hub_download|from_pretrained|snapshot_download|torch\.hub|"
    r"github\.com|raw\.githubusercontent)"
)
"""A solution that fetches from anywhere else (GitHub, a model hub, a URL)."""


def extract(source: str, into: Path) -> Path:
    """SOURCE as a folder of tasks: itself, or `REPO:PATH` read out of a bare git repo."""
    if ":" not in source or Path(source).is_dir():
        return Path(source)
    repo, _, sub = source.rpartition(":")
    target = into / "source"
    done = target / ".complete"
    if done.exists():
        return target / sub
    shutil.rmtree(target, ignore_errors=True)
    listing = subprocess.run(
        ["git", "-C", repo, "ls-tree", "-r", "-z", "HEAD", sub], capture_output=True, check=True
    ).stdout.split(b"\0")
    absent = []
    for entry in filter(None, listing):
        meta, _, raw = entry.partition(b"\t")
        mode, _, sha = meta.decode().split()
        path = raw.decode()
        blob = subprocess.run(["git", "-C", repo, "cat-file", "blob", sha], capture_output=True)
        dest = target / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        if blob.returncode != 0:
            absent.append(path)
            continue
        if mode == "120000":
            dest.symlink_to(blob.stdout.decode())
            continue
        dest.write_bytes(blob.stdout)
        if mode == "100755":
            dest.chmod(0o755)
    (target / "ABSENT.txt").write_text("".join(f"{p}\n" for p in absent))
    done.write_text("")
    return target / sub


def needs_internet(task_folder: Path, folder: str = "solution") -> str:
    """What the task's own solution (or its image's build) reaches: no, registries, or
    other (a host the registries are not)."""
    texts = []
    for path in sorted((task_folder / folder).rglob("*")):
        if folder == "environment" and path.suffix not in (".sh", "") and path.name != "Dockerfile":
            continue
        if path.is_file() and path.stat().st_size < 1 << 20:
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    text = "\n".join(
        line for t in texts for line in t.splitlines() if not line.lstrip().startswith("#")
    )
    if NETWORK_OTHER.search(text):
        return "other: " + NETWORK_OTHER.search(text).group(0)  # type: ignore[union-attr]
    if NETWORK_REGISTRIES.search(text):
        return "registries: " + " ".join(NETWORK_REGISTRIES.search(text).group(0).split())  # type: ignore[union-attr]
    return "no"


def load(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    path = out / "results.jsonl"
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                found[(row["task"], row["phase"])] = row
    return found


def append(out: Path, row: dict[str, Any]) -> None:
    with (out / "results.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def import_all(source: Path, out: Path) -> None:
    from termgym.importing import import_tasks

    done = load(out)
    if any(phase == "import" for _, phase in done):
        return
    started = time.perf_counter()
    report = import_tasks([source], out / "tasks", "harbor")
    seconds = time.perf_counter() - started
    for converted in report.converted:
        spec = (converted.folder / "task.yaml").read_text()
        append(out, {
            "task": converted.original.name, "phase": "import", "imported": True,
            "id": converted.task_id, "protection": converted.protection,
            "approximate": list(converted.approximate), "missing": list(converted.missing),
            "internet": needs_internet(converted.original),
            "build_internet": needs_internet(converted.original, "environment"),
            "agent_timeout": _limit(spec, "agent_timeout"),
            "grading_timeout": _limit(spec, "grading_timeout"),
        })  # fmt: skip
    for folder, why in report.refused:
        append(out, {"task": folder.name, "phase": "import", "imported": False, "why": why,
                     "internet": needs_internet(folder)})  # fmt: skip
    print(f"{len(report.converted)} imported, {len(report.refused)} refused in {seconds:.1f} s")


def _limit(spec: str, key: str) -> float:
    match = re.search(rf"^\s+{key}: ([\d.]+)", spec, re.M)
    return float(match.group(1)) if match else 600.0


def refusal_reason(why: str) -> str:
    """A refusal's reason, in a few words (for the table's tally)."""
    for pattern, reason in (
        (r"files its image needs are missing", "files missing from this copy"),
        (r"reaches the network at test time", "tests reach the network"),
        (r"base image .* no image registry", "unknown base image"),
        (r"copies from an image", "COPY --from an unknown image"),
        (r"multi-step", "multi-step task"),
        (r"several services|services", "multi-service compose"),
    ):
        if re.search(pattern, why):
            return reason
    return why[:80]


# -- one phase, in a subprocess -------------------------------------------------------------


class DoNothing:
    """Submits at once: the floor every task's tests must fail."""

    name = "do-nothing"
    privileged = False

    def reset(self, context: Any) -> None:
        pass

    def act(self, observation: Any) -> str:
        from termgym.agents import SUBMIT

        return SUBMIT

    def transcript(self) -> list[dict[str, Any]]:
        return []


def phase(tasks: Path, task_id: str, which: str, out: Path, backend: str, cap: float) -> None:
    """Run one phase and print its result as one JSON line (the parent records it)."""
    from termgym.agents import register_agent
    from termgym.run import RunConfig, Runner
    from termgym.tasks import load_task, task_image

    task = load_task(tasks / task_id)
    started = time.monotonic()
    if which == "build":
        try:
            image = task_image(task)
        except Exception as exc:  # noqa: BLE001 - recorded, whatever it was
            print(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"[-3000:],
                              "seconds": time.monotonic() - started}))  # fmt: skip
            return
        print(json.dumps({"ok": True, "image": image, "seconds": time.monotonic() - started}))
        return
    register_agent("do-nothing", DoNothing)
    agent = "oracle" if which == "oracle" else "do-nothing"
    run_dir = out / "runs" / f"{task_id}-{which}"
    shutil.rmtree(run_dir, ignore_errors=True)
    config = RunConfig(
        agent=agent, tasks=(task_id,), variants=("original",), episodes=1, concurrency=1,
        out=run_dir, backend=backend, retries=0, paths=(str(tasks),),
        agent_timeout=min(task.spec.limits.agent_timeout, cap) if cap else None,
    )  # fmt: skip
    summary = Runner(config).run()
    (result,) = summary.results
    print(json.dumps({
        "ok": result.status == "ok", "status": result.status, "reward": result.reward,
        "class": result.episode_class, "passed": result.passed, "error": result.error,
        "timed_out": result.agent_timed_out, "phases": result.phases,
        "recording": result.episode_file, "seconds": time.monotonic() - started,
        **read_recording(result.episode_file),
    }))  # fmt: skip


def read_recording(path: str | None) -> dict[str, Any]:
    """What an episode's recording says of its failure: the last step's exit code and output
    tail, and the tests the verifier listed as failed."""
    if not path or not Path(path).is_file():
        return {}
    steps: list[dict[str, Any]] = []
    verdicts: dict[str, Any] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("type") == "step":
            steps.append(record)
        elif record.get("type") == "end":
            verdicts = record.get("verdicts") or {}
    found: dict[str, Any] = {}
    if steps:
        found["last_exit"] = steps[-1].get("exit_code")
        found["last_output"] = str(steps[-1].get("output", ""))[-1200:]
    messages = [str(r.get("message", "")) for v in verdicts.values() for r in v.get("results", [])]
    found["failed_tests"] = sorted(
        {m.group(1) for text in messages for m in re.finditer(r"FAILED \S*::(\S+)", text)}
    )
    found["verifier_tail"] = "\n".join(messages)[-1500:]
    return found


def build_cause(log: str) -> str:
    """A failed build, in one line: what it could not reach, or its last line."""
    host = re.search(
        r"Could not resolve host:? '?([\w.-]+)|Failed to download https?://([\w.-]+)|"
        r"Name or service not known'? thrown while requesting \w+ https?://([\w.-]+)",
        log,
    )
    if host:
        name = host.group(1) or host.group(2) or host.group(3)
        step = re.findall(r"The command '/bin/sh -c ([^']{0,80})", log)
        return f"the build fetches from {name} (not reachable here)" + (
            f": `{step[-1]}`" if step else ""
        )
    failed = re.findall(r"The command '/bin/sh -c ([^']*)' returned a non-zero code", log)
    url = re.search(r"\b(?:wget|curl|git\s+clone)\b[^;&|]*?https?://([\w.-]+)", failed[-1]) if (
        failed
    ) else None  # fmt: skip
    if url:
        return f"the build fetches from {url.group(1)} (not reachable here): `{failed[-1][:80]}`"
    lines = log.strip().splitlines() or [""]
    return lines[-1][:160]


def failure_cause(oracle: dict[str, Any]) -> str:
    """The oracle's failure, in one line, from what its recording says."""
    output = str(oracle.get("last_output", ""))
    if re.search(r"setgroups .* failed|seteuid .* failed", output):
        return "agent sandbox: apt-get lacks capabilities (setgroups)"
    if re.search(r"Operation not permitted|password not changed|cannot lock /etc", output):
        line = next(
            (x for x in output.splitlines() if re.search(r"not permitted|not changed|lock", x)),
            "",
        )
        return f"agent sandbox lacks a capability: {line.strip()[:100]}"
    if oracle.get("status") not in (None, "ok"):
        return f"{oracle.get('status')}: {str(oracle.get('error') or '')[:140]}"
    if oracle.get("timed_out"):
        return "the solution ran past the agent timeout"
    if oracle.get("last_exit") not in (0, "0", None):
        tail = output.strip().splitlines()[-1:] or [""]
        return f"solution exit {oracle.get('last_exit')}: {tail[0][:140]}"
    failed = oracle.get("failed_tests") or []
    missing = re.search(r"No module named '?([\w.]+)", str(oracle.get("verifier_tail", "")))
    if failed and (missing or "ModuleNotFo" in str(oracle.get("verifier_tail", ""))):
        name = missing.group(1) if missing else "a module"
        return (
            f"the tests import {name}, which the solution installed: the verifier grades its "
            "own python and the workdir"
        )
    if failed:
        return "tests failed after the solution succeeded: " + ", ".join(failed)[:140]
    return str(oracle.get("error") or "")[:160]


def run_phase(tasks: Path, task_id: str, which: str, out: Path, args: argparse.Namespace,
              deadline: float) -> dict[str, Any]:  # fmt: skip
    argv = ["nice", "-n", "10", sys.executable, __file__, "--phase", which, str(tasks), task_id,
            str(out), "--backend", args.backend,
            "--max-agent-timeout", str(args.max_agent_timeout)]  # fmt: skip
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=deadline, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"no result within the deadline of {deadline:.0f} s",
                "seconds": time.monotonic() - started}  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"ok": False, "error": f"exit {done.returncode}: {done.stderr[-1500:]}",
                "seconds": time.monotonic() - started}  # fmt: skip
    return dict(json.loads(lines[-1]))


def measure(out: Path, args: argparse.Namespace) -> None:
    done = load(out)
    imported = sorted(
        (row for (_, phase_), row in done.items() if phase_ == "import" and row["imported"]),
        key=lambda row: row["task"],
    )
    if args.tasks:
        wanted = set(args.tasks.split(","))
        imported = [row for row in imported if row["task"] in wanted or row["id"] in wanted]
    elif args.runnable:
        imported = [row for row in imported if _reaches_only_registries(row)]
    elif args.sample:
        imported = random.Random(args.seed).sample(imported, min(args.sample, len(imported)))
    for row in imported:
        task, task_id = row["task"], row["id"]
        for which in ("build", "oracle", "nothing"):
            if (task, which) in done:
                continue
            if which != "build" and not done[(task, "build")].get("ok"):
                break
            budget = args.build_timeout if which == "build" else (
                min(row["agent_timeout"], args.max_agent_timeout or row["agent_timeout"])
                + row["grading_timeout"] + 600
            )  # fmt: skip
            print(f"{task}: {which} (deadline {budget:.0f} s) ...", flush=True)
            result = run_phase(out / "tasks", task_id, which, out, args, budget)
            record = {"task": task, "phase": which, **result}
            append(out, record)
            done[(task, which)] = record
            print(f"{task}: {which}: {_cell(record)}", flush=True)
            write_table(out)
        if args.drop_images:
            drop_images(task_id)


def drop_images(task_id: str) -> None:
    """Remove the task's built images (TB 2.0's images total more disk than a machine may have)."""
    from termgym.images import docker_client

    client = docker_client()
    for image in client.images.list(name=f"termgym/task-{task_id}"):
        for tag in image.tags:
            client.images.remove(tag, force=True)


def redo(out: Path, which: str) -> None:
    """Drop the measured phases of some tasks (`failed`: of those whose build or oracle
    failed), keeping their import, so the next measurement runs them again."""
    done = load(out)
    if which == "failed":
        tasks = {t for (t, p), row in done.items() if p in ("build", "oracle") and not
                 (row.get("ok") if p == "build" else row.get("passed"))}  # fmt: skip
    else:
        tasks = set(which.split(","))
    kept = [row for row in done.values() if row["phase"] == "import" or row["task"] not in tasks]
    path = out / "results.jsonl"
    path.with_suffix(".jsonl.tmp").write_text("".join(json.dumps(r) + "\n" for r in kept))
    path.with_suffix(".jsonl.tmp").replace(path)


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return ""
    if row["phase"] == "build":
        return f"built ({row['seconds']:.0f} s)" if row.get("ok") else "build failed"
    if row.get("status") not in (None, "ok"):
        return f"{row.get('status')}"
    if "reward" not in row:
        return "no result"
    verdict = "pass" if row.get("passed") else "fail"
    return f"{verdict} ({row.get('class') or '-'}, {row['seconds']:.0f} s)"


def write_table(out: Path) -> None:
    done = load(out)
    notes = {}
    notes_path = out / "causes.json"
    if notes_path.is_file():
        notes = json.loads(notes_path.read_text())
    rows = sorted((r for (_, p), r in done.items() if p == "import"), key=lambda r: r["task"])
    lines = [
        "| task | imported | refused because | solution reaches | build reaches | build | oracle | "
        "do-nothing | failure cause |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    tally: dict[str, int] = {}
    for row in rows:
        task = row["task"]
        build, oracle, nothing = (done.get((task, p)) for p in ("build", "oracle", "nothing"))
        if not row["imported"]:
            reason = refusal_reason(row["why"])
            tally[reason] = tally.get(reason, 0) + 1
        cause = notes.get(task, "")
        if not cause and build is not None and not build.get("ok"):
            cause = build_cause(str(build.get("error", "")))
        elif not cause and oracle is not None and not oracle.get("passed"):
            cause = failure_cause(oracle)
        lines.append(
            f"| {task} | {'yes' if row['imported'] else 'no'} | "
            f"{'' if row['imported'] else refusal_reason(row['why'])} | {row['internet']} | "
            f"{row.get('build_internet', '')} | "
            f"{_cell(build)} | {_cell(oracle)} | {_cell(nothing)} | "
            f"{cause.replace('|', '/')} |"
        )
    built_causes = {
        t: build_cause(str(row.get("error", "")))
        for (t, phase), row in done.items()
        if phase == "build" and not row.get("ok")
    }
    imported = sum(1 for r in rows if r["imported"])
    oracles = [done[(r["task"], "oracle")] for r in rows if (r["task"], "oracle") in done]
    nothings = [done[(r["task"], "nothing")] for r in rows if (r["task"], "nothing") in done]
    summary = [
        f"{len(rows)} tasks: {imported} imported, {len(rows) - imported} refused"
        + (
            " (" + ", ".join(f"{n} {why}" for why, n in sorted(tally.items())) + ")"
            if tally
            else ""
        ),
        f"oracle: {sum(1 for o in oracles if o.get('passed'))} of {len(oracles)} run pass; "
        f"do-nothing: {sum(1 for o in nothings if o.get('passed'))} of {len(nothings)} run pass",
        _runnable_summary(rows, done, {**built_causes, **notes}),
        "",
    ]
    (out / "table.md").write_text("\n".join(summary + lines) + "\n")


def _reaches_only_registries(row: dict[str, Any]) -> bool:
    """Whether an imported task's solution and image build reach no host but the registries."""
    return not any(
        str(row.get(key, "")).startswith("other") for key in ("internet", "build_internet")
    )


def _runnable_summary(
    rows: list[dict[str, Any]],
    done: dict[tuple[str, str], dict[str, Any]],
    causes: dict[str, str],
) -> str:
    """The target's figure: the oracle on the imported tasks whose solution, image build and
    tests reach no host beyond the package registries (the only ones these machines reach).
    The scan of what a task reaches misses some hosts (an R package from CRAN, a test set
    downloaded by the tests); a measured cause that names an unreachable host counts too."""
    unreachable = re.compile(r"not reachable here|do not reach")
    runnable = [r["task"] for r in rows if r["imported"] and _reaches_only_registries(r)]
    measured = [t for t in runnable if (t, "oracle") in done or (t, "build") in done]
    reach = [t for t in measured if unreachable.search(causes.get(t, ""))]
    counted = [t for t in measured if t not in reach]
    passed = [t for t in counted if (done.get((t, "oracle")) or {}).get("passed")]
    nothing = [t for t in counted if (done.get((t, "nothing")) or {}).get("passed")]
    share = f" ({100 * len(passed) / len(counted):.0f}%)" if counted else ""
    return (
        f"tasks that reach only the registries by the scan: {len(runnable)}, measured "
        f"{len(measured)}, of which {len(reach)} reach another host after all "
        f"({', '.join(reach) or 'none'}); of the other {len(counted)}: oracle passes "
        f"{len(passed)}{share}, do-nothing passes {len(nothing)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", nargs="?")
    parser.add_argument("out", nargs="?")
    parser.add_argument("--tasks", help="Comma-separated task folder names (or ids) to measure.")
    parser.add_argument("--sample", type=int, help="Measure this many imported tasks, drawn.")
    parser.add_argument("--seed", type=int, default=0, help="The draw of --sample.")
    parser.add_argument(
        "--runnable",
        action="store_true",
        help="Measure only the tasks whose solution and build reach no host but the registries.",
    )
    parser.add_argument("--import-only", action="store_true")
    parser.add_argument(
        "--redo",
        help="Comma-separated tasks (or `failed`) whose build, oracle and do-nothing results "
        "are dropped and measured again.",
    )
    parser.add_argument(
        "--drop-images",
        action="store_true",
        help="Remove each task's image once its phases are measured (bounds the disk used).",
    )
    parser.add_argument("--table", metavar="OUT", help="Only rewrite OUT/table.md.")
    parser.add_argument("--backend", default="docker")
    parser.add_argument("--build-timeout", type=float, default=3600.0)
    parser.add_argument("--max-agent-timeout", type=float, default=0.0,
                        help="Cap each task's agent timeout (0: the task's own).")  # fmt: skip
    parser.add_argument("--phase", nargs=4, metavar=("WHICH", "TASKS", "TASK", "OUT"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    if args.phase:
        which, tasks, task_id, out = args.phase
        phase(Path(tasks), task_id, which, Path(out), args.backend, args.max_agent_timeout)
        return
    if args.table:
        write_table(Path(args.table))
        return
    if not (args.source and args.out):
        parser.error("expected SOURCE and OUT")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    source = extract(args.source, out)
    import_all(source.resolve(), out)
    if args.redo:
        redo(out, args.redo)
    write_table(out)
    if not args.import_only:
        measure(out, args)
    print(f"table: {out / 'table.md'}")


if __name__ == "__main__":
    main()
