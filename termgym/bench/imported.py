"""Imported vs bundled: a Terminal-Bench task runs on the same machinery as a bundled task.

Side by side in one run, on one backend: importing the task (a file conversion) and finding
it again through the on-the-fly cache; then two environments open at once, the imported
task (tests/fixtures/foreign/tb/tb-weight-limit, Terminal-Bench's layout) and a bundled one
of the same shape (fuel-planner: a weight limit read from a policy file), whose steps,
warm resets and graded submits alternate. Both are a TerminalEnv over the same sandbox class
with the same pool and the same clean verifier; only the grader kind differs
(`imported-tests` runs the task's own run-tests.sh, `pytest` runs termgym's graders).
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from termgym.bench import Row, Section, timings_row

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "foreign" / "tb"
IMPORTED = "tb-weight-limit"
BUNDLED = "fuel-planner"


def _conversions(n: int, work: Path) -> tuple[Row, Row]:
    """convert() of the task n times, and the cached lookup `--path` does afterwards."""
    from termgym.importing import convert, converted, read_foreign

    source = work / "src" / IMPORTED
    shutil.copytree(FIXTURE / IMPORTED, source)
    spent = []
    for i in range(n):
        began = time.perf_counter()
        convert(read_foreign(source), work / f"out{i}")
        spent.append(time.perf_counter() - began)
    converted(source)  # the first lookup converts into the cache
    cached = []
    for _ in range(n):
        began = time.perf_counter()
        converted(source)
        cached.append(time.perf_counter() - began)
    return (
        timings_row("import one task (read + convert, files written)", spent),
        timings_row("find it again on --path (cached conversion)", cached),
    )


def _wait_refill(env: object) -> None:
    from termgym.env import shared_pool

    options = env.options  # type: ignore[attr-defined]
    pool = shared_pool(options.backend, options.pool_size, False)
    deadline = time.monotonic() + 30
    while pool.ready(options.config) < 1 and time.monotonic() < deadline:
        time.sleep(0.02)


def _side_by_side(
    task_dir: Path, steps: int, episodes: int, record: Path
) -> tuple[dict[str, list[float]], str]:
    """Steps, warm resets and graded submits of both envs, alternated."""
    from termgym import SUBMIT
    from termgym.check import run_solution
    from termgym.env import make

    out: dict[str, list[float]] = {}
    common = {"variant": "contradicted", "pool_size": 1, "max_steps": steps + 100}
    envs = {
        "imported": make(task_dir, record_dir=record / "i", **common),
        "bundled": make(BUNDLED, record_dir=record / "b", **common),
    }
    try:
        boxes = set()
        for env in envs.values():
            env.reset(seed=0)
            episode = env.episode
            assert episode is not None
            boxes.add(type(episode.sandbox))
            for _ in range(20):
                env.step("true")
        if len(boxes) != 1:
            raise AssertionError(f"expected one sandbox class for both tasks, found {boxes}")
        for _ in range(steps):
            for name, env in envs.items():
                began = time.perf_counter()
                env.step("true")
                out.setdefault(f"{name} step", []).append(time.perf_counter() - began)
        for seed in range(episodes):
            for name, env in envs.items():
                _wait_refill(env)
                began = time.perf_counter()
                env.reset(seed=seed)
                out.setdefault(f"{name} reset", []).append(time.perf_counter() - began)
                episode = env.episode
                assert episode is not None
                run_solution(episode.sandbox, episode.plan, env.options.task.spec.oracle)
                began = time.perf_counter()
                _, reward, *_rest, info = env.step(SUBMIT)
                out.setdefault(f"{name} submit", []).append(time.perf_counter() - began)
                if reward != 1.0 or info.get("class") != "adapted":
                    raise AssertionError(
                        f"{name}: the oracle's contradicted episode should be adapted with "
                        f"reward 1, found {reward} and {info.get('class')!r}"
                    )
        box_name = next(iter(boxes)).__name__
    finally:
        for env in envs.values():
            env.close()
    return out, box_name


def bench_imported(quick: bool = False) -> Section:
    """The imported-vs-bundled section of `python -m termgym.bench`."""
    from termgym.importing import convert, read_foreign

    if not (FIXTURE / IMPORTED).is_dir():
        return Section(
            "imported",
            "Imported vs bundled tasks",
            (),
            (f"skipped: needs a checkout (the fixture {IMPORTED} under tests/fixtures)",),
        )
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="termgym-bench-imported-") as tmp:
        work = Path(tmp)
        convert_row, cached_row = _conversions(10 if quick else 40, work)
        tasks = work / "tasks"
        done = convert(read_foreign(FIXTURE / IMPORTED), tasks)
        out, box = _side_by_side(
            done.folder, 200 if quick else 1000, 3 if quick else 10, work / "rec"
        )
    labels = {
        "step": "env.step(`true`), recording on",
        "reset": "reset, warm pool",
        "submit": "submit: grading in the clean verifier, with the original shadow",
    }
    rows = [convert_row, cached_row]
    for key, label in labels.items():
        for name, task in (("imported", IMPORTED), ("bundled", BUNDLED)):
            rows.append(timings_row(f"{name} ({task}): {label}", out[f"{name} {key}"]))
    p50 = statistics.median
    ratios = {
        key: p50(out[f"imported {key}"]) / max(p50(out[f"bundled {key}"]), 1e-12) for key in labels
    }
    notes = [
        f"same machinery: both are a TerminalEnv over {box} with the same pool and "
        "clean verifier; only the grader kind differs (imported-tests runs the task's own "
        "run-tests.sh in the verifier, pytest runs termgym's graders)",
        f"imported / bundled at p50: step {ratios['step']:.2f}x, warm reset "
        f"{ratios['reset']:.2f}x, submit (grading) {ratios['submit']:.2f}x",
        f"import: {convert_row.p50_ms:.1f} ms a task (p50), {cached_row.p50_ms:.2f} ms to find "
        "it again on --path (the cache is keyed by the folder's files, sizes and times)",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; 1-minute load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after (other work on the machine slows every figure)",
    ]
    return Section("imported", "Imported vs bundled tasks", tuple(rows), tuple(notes))
