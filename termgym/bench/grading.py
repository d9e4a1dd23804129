"""Grading overhead per episode on the bundled tasks, and the cost of shadow rule sets."""

from __future__ import annotations

import os
import platform
import statistics
import time

from termgym.bench import Section, timings_row
from termgym.grading import grade, grade_rulesets, prepare
from termgym.grading._check import run_solution
from termgym.sandbox import SandboxConfig, make_sandbox
from termgym.tasks import (
    GraderSpec,
    RuleSet,
    Task,
    instantiate,
    list_tasks,
    sampled_values,
    task_image,
)

_TRIVIAL = GraderSpec.model_validate({"name": "workdir-exists", "kind": "file", "path": "."})


def _rulesets(task: Task) -> tuple[list[RuleSet], list[RuleSet]]:
    """One rule set (contradicted), and three: contradicted, original and sampled values."""
    plan = instantiate(task, "contradicted", seed=1)
    graders = tuple(task.spec.graders)
    sampled = RuleSet("sampled", sampled_values(task, 1), graders)
    return [plan.rulesets[0]], [*plan.rulesets, sampled]


def _bench_task(task: Task, reps: int, out: dict[str, list[float]]) -> None:
    plan = instantiate(task, "contradicted", seed=1)
    config = SandboxConfig(
        image=task_image(task), workdir=plan.workdir, network=task.spec.limits.network
    )
    one, three = _rulesets(task)
    with make_sandbox("docker", config) as box:
        prepare(box, plan)
        run_solution(box, plan, task.spec.oracle)
        report = grade(box, plan)  # the real thing: first freeze, own rules + original shadow
        out["episode"].append(report.timings["total"])
        out["freeze"].append(report.timings["freeze"])
        trivial = [RuleSet("original", one[0].rules, (_TRIVIAL,))]
        for _ in range(reps):  # side by side, interleaved, on the same frozen final state
            began = time.perf_counter()
            grade_rulesets(box, task, trivial)
            out["machinery"].append(time.perf_counter() - began)
            began = time.perf_counter()
            grade_rulesets(box, task, one)
            out["one"].append(time.perf_counter() - began)
            began = time.perf_counter()
            grade_rulesets(box, task, three)
            out["three"].append(time.perf_counter() - began)
            began = time.perf_counter()
            for ruleset in three:
                grade_rulesets(box, task, [ruleset])
            out["naive"].append(time.perf_counter() - began)


def bench_grading(quick: bool = False) -> Section:
    """Grading overhead (freeze, inject, run graders, read) and shadow rule-set cost."""
    tasks = [t for t in list_tasks([]) if "contradicted" in t.spec.variants]
    if quick:
        tasks = tasks[:3]
    reps = 2 if quick else 4
    load_before = os.getloadavg()[0]
    out: dict[str, list[float]] = {
        k: [] for k in ("episode", "freeze", "one", "three", "naive", "machinery")
    }
    for task in tasks:
        _bench_task(task, reps, out)
    rows = (
        timings_row(
            "episode grading: freeze + own rules + original shadow (one per task)", out["episode"]
        ),
        timings_row("of which freeze (stop every agent process)", out["freeze"]),
        timings_row(
            "machinery alone: one `file` check (inject + exec + runner + read)", out["machinery"]
        ),
        timings_row("1 rule set (inject + one exec + read)", out["one"]),
        timings_row("3 rule sets in one exec (termgym)", out["three"]),
        timings_row("3 rule sets, one exec each (naive)", out["naive"]),
    )
    p50 = statistics.median
    notes = (
        f"tasks: {len(tasks)} bundled ({', '.join(t.id for t in tasks)}); oracle's final state",
        f"episode grading p50: {p50(out['episode']):.2f} s (target: at most 1 s)",
        f"3 rule sets / 1 rule set at p50: {p50(out['three']) / p50(out['one']):.2f}x "
        "(target: at most 2x); naive / 1: "
        f"{p50(out['naive']) / p50(out['one']):.2f}x",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}, "
        f"Python {platform.python_version()}; 1-minute load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after (other work on the machine slows every figure)",
    )
    return Section("grading", "Grading overhead", rows, notes)
