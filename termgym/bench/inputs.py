"""What fingerprinting the hidden tests' inputs costs a grading (`termgym check` records them).

On each bundled task, the oracle's final state on the contradicted variant is exported once;
then the same grading (contradicted with the original shadow, in a warm verifier) runs with
and without `record_inputs`, alternating, so both columns grade the same work on the same
machine in the same minutes.
"""

from __future__ import annotations

import functools
import os
import platform
import statistics
import tempfile
import time

from termgym.bench import Section, timings_row
from termgym.bench.grading import _contradicted, _make, _solved, _wait_warm
from termgym.env import SandboxPool
from termgym.grading import GradeReport, grade_rulesets_in, report_inputs
from termgym.sandbox import CopyLimits
from termgym.tasks import Task, list_tasks


def _bench_task(
    task: Task, pool: SandboxPool, reps: int, out: dict[str, list[float]], starts: list[int]
) -> None:
    plan, config, verifier = _contradicted(task, pool)
    box = _solved("docker", task, config)
    try:
        with tempfile.TemporaryFile() as work:
            box.freeze()
            box.export_paths([plan.workdir], work, CopyLimits())
            for _ in range(reps):
                pair = []
                for record in (False, True):
                    _wait_warm(pool, verifier)
                    work.seek(0)
                    began = time.perf_counter()
                    verdicts = grade_rulesets_in(
                        pool, config, task, plan.rulesets, work=work, record_inputs=record
                    ).verdicts
                    pair.append(time.perf_counter() - began)
                    out["on" if record else "off"].append(pair[-1])
                    if record:
                        report = GradeReport(plan.variant, plan.rulesets[0].name, verdicts, None)
                        starts.append(report_inputs(report).starts)
                out["pairs"].append(pair[1] / pair[0])
    finally:
        box.close()


def bench_inputs(quick: bool = False) -> Section:
    """Grading with and without input fingerprints, side by side, on the bundled tasks."""
    tasks = [t for t in list_tasks([]) if "contradicted" in t.spec.variants]
    if quick:
        tasks = tasks[:3]
    reps = 1 if quick else 3
    load_before = os.getloadavg()[0]
    out: dict[str, list[float]] = {"off": [], "on": [], "pairs": []}
    starts: list[int] = []
    pool = SandboxPool(functools.partial(_make, "docker"), size=1)
    try:
        for task in tasks:
            _bench_task(task, pool, reps, out, starts)
    finally:
        pool.close()
    p50 = statistics.median
    rows = (
        timings_row("grading, inputs not recorded", out["off"]),
        timings_row("grading, inputs recorded (termgym check)", out["on"]),
    )
    notes = (
        f"tasks: {len(tasks)} bundled; the oracle's final state, contradicted with the "
        f"original shadow, in a warm docker verifier; {reps} repetitions each, alternating",
        f"recorded / not recorded at p50: {p50(out['on']) / p50(out['off']):.2f}x "
        f"(mean {statistics.fmean(out['on']) / statistics.fmean(out['off']):.2f}x); median of "
        f"the {len(out['pairs'])} paired ratios (same task, back to back): "
        f"{p50(out['pairs']):.2f}x",
        f"program starts fingerprinted per grading: {min(starts)} to {max(starts)}, "
        f"{sum(starts) / len(starts):.0f} on average",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; 1-minute load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after",
    )
    return Section("inputs", "Recording the hidden tests' inputs", rows, notes)
