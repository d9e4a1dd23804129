"""Grading cost per episode on the bundled tasks: in the agent's sandbox (before) and in a
clean verifier (now), side by side on the same final states; and the cost of shadow rule sets.

"Before" reproduces the design termgym graded with until the verifier: a freeze by one exec
inside the agent's container (`kill -9 -1` from the container's own shell), then the
runner's one exec in that same container, with that container's programs. "Now" is
`grade()`: the engine stops the container, the work is copied out and into a verifier taken
warm from a pool, and the runner's one exec runs there. Each repetition prepares a fresh
sandbox with the task's oracle, measures "before" on it, then "now" (which stops it).
"""

from __future__ import annotations

import functools
import os
import platform
import statistics
import time
from collections.abc import Sequence

from termgym.bench import Section, timings_row
from termgym.check import run_solution
from termgym.env import SandboxPool
from termgym.grading import (
    grade,
    grade_rulesets,
    grade_rulesets_in,
    pooled_verifiers,
    prepare,
    verifier_config,
)
from termgym.sandbox import CopyLimits, Sandbox, SandboxConfig, make_sandbox
from termgym.tasks import (
    EpisodePlan,
    GraderSpec,
    RuleSet,
    Task,
    instantiate,
    list_tasks,
    sampled_values,
    task_image,
)

_TRIVIAL = GraderSpec.model_validate({"name": "workdir-exists", "kind": "file", "path": "."})
_OLD_FREEZE = ["sh", "-c", "kill -9 -1 2>/dev/null; true"]
"""The freeze of the design before the verifier: one exec in the agent's own container."""


def _rulesets(task: Task) -> tuple[list[RuleSet], list[RuleSet]]:
    """One rule set (contradicted), and three: contradicted, original and sampled values."""
    plan = instantiate(task, "contradicted", seed=1)
    graders = tuple(task.spec.graders)
    sampled = RuleSet("sampled", sampled_values(task, 1), graders)
    return [plan.rulesets[0]], [*plan.rulesets, sampled]


def _solved(backend: str, task: Task, config: SandboxConfig) -> Sandbox:
    plan = instantiate(task, "contradicted", seed=1)
    box = make_sandbox(backend, config)
    box.start()
    prepare(box, plan)
    run_solution(box, plan, task.spec.oracle)
    return box


def _contradicted(
    task: Task, pool: SandboxPool
) -> tuple[EpisodePlan, SandboxConfig, SandboxConfig]:
    """The task's contradicted episode, its sandbox config and its verifier's, which `pool`
    starts warming."""
    plan = instantiate(task, "contradicted", seed=1)
    config = SandboxConfig(
        image=task_image(task), workdir=plan.workdir, disk_mb=task.spec.limits.disk_mb
    )
    verifier = verifier_config(config)
    pool.prefill(verifier)
    return plan, config, verifier


def _bench_task(
    backend: str, task: Task, pool: SandboxPool, reps: int, out: dict[str, list[float]]
) -> None:
    plan, config, verifier = _contradicted(task, pool)
    # what `grade` takes from the pool (prepared standbys), as an episode warms them
    pooled = pooled_verifiers(config, backend, plan)
    graded = pooled[0] if pooled else verifier
    if pooled:
        pool.prefill(*pooled)
    one, three = _rulesets(task)
    trivial = [RuleSet("original", one[0].rules, (_TRIVIAL,))]
    for _ in range(reps):
        box = _solved(backend, task, config)
        try:
            _wait_warm(pool, verifier)
            began = time.perf_counter()
            if backend == "docker":
                box.exec(_OLD_FREEZE, workdir="/")
            grade_rulesets(box, task, plan.rulesets)
            out[f"{backend} before"].append(time.perf_counter() - began)
            _wait_warm(pool, graded)
            report = grade(box, plan, verifiers=pool)
            out[f"{backend} now"].append(report.timings["total"])
            for phase in ("freeze", "export", "verifier", "inject", "run"):
                out[f"{backend} {phase}"].append(report.timings.get(phase, 0.0))
        finally:
            box.close()
    if backend != "docker":
        return
    box = _solved(backend, task, config)
    try:  # the shadow rule sets' cost, in verifiers, on one exported final state
        import tempfile

        with tempfile.TemporaryFile() as work:
            box.freeze()
            box.export_paths([plan.workdir], work, CopyLimits())
            for name, sets in (("machinery", trivial), ("one", one), ("three", three)):
                for _ in range(reps):
                    _wait_warm(pool, verifier)
                    work.seek(0)
                    began = time.perf_counter()
                    grade_rulesets_in(pool, config, task, sets, work=work)
                    out[name].append(time.perf_counter() - began)
    finally:
        box.close()


def _make(backend: str, config: SandboxConfig) -> Sandbox:
    return make_sandbox(backend, config)


def _wait_warm(pool: SandboxPool, config: SandboxConfig, patience: float = 30.0) -> None:
    deadline = time.monotonic() + patience
    while pool.ready(config) < 1 and time.monotonic() < deadline:
        time.sleep(0.02)


def _ratio(out: dict[str, list[float]], a: str, b: str) -> str:
    if not out.get(a) or not out.get(b):
        return "n/a"
    return f"{statistics.median(out[a]) / statistics.median(out[b]):.2f}x"


def bench_grading(quick: bool = False, backends: Sequence[str] = ("docker", "bwrap")) -> Section:
    """Episode grading before and after the clean verifier, per phase; shadow rule-set cost."""
    tasks = [t for t in list_tasks([]) if "contradicted" in t.spec.variants]
    if quick:
        tasks = tasks[:3]
    reps = 1 if quick else 2
    load_before = os.getloadavg()[0]
    out: dict[str, list[float]] = {}
    for backend in backends:
        for key in ("before", "now", "freeze", "export", "verifier", "inject", "run"):
            out[f"{backend} {key}"] = []
    for key in ("machinery", "one", "three"):
        out[key] = []
    for backend in backends:
        pool = SandboxPool(functools.partial(_make, backend), size=1)
        try:
            for task in tasks:
                _bench_task(backend, task, pool, reps, out)
        finally:
            pool.close()
    rows = []
    for backend in backends:
        rows += [
            timings_row(
                f"{backend}: before, graded in the agent's sandbox", out[f"{backend} before"]
            ),
            timings_row(f"{backend}: now, graded in a clean verifier", out[f"{backend} now"]),
        ]
        rows += [
            timings_row(f"{backend}: now, of which {phase}", out[f"{backend} {phase}"])
            for phase in ("freeze", "export", "verifier", "inject", "run")
        ]
    if out["one"]:
        rows += [
            timings_row("verifier machinery alone: one `file` check", out["machinery"]),
            timings_row("1 rule set in a verifier", out["one"]),
            timings_row("3 rule sets in one exec in a verifier", out["three"]),
        ]
    p50 = statistics.median
    notes = [
        f"tasks: {len(tasks)} bundled ({', '.join(t.id for t in tasks)}); the oracle's final "
        f"state, contradicted, with the original shadow; {reps} repetitions each",
    ]
    for backend in backends:
        if out[f"{backend} now"]:
            notes.append(
                f"{backend}: episode grading p50 {p50(out[f'{backend} now']):.2f} s now, "
                f"{p50(out[f'{backend} before']):.2f} s before: "
                f"{_ratio(out, f'{backend} now', f'{backend} before')} (target: at most 1.5x)"
            )
    if out["one"]:
        notes.append(
            f"3 rule sets / 1 rule set at p50: {_ratio(out, 'three', 'one')} (target: at most 2x)"
        )
    notes.append(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}, "
        f"Python {platform.python_version()}; 1-minute load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after (other work on the machine slows every figure)"
    )
    return Section("grading", "Grading overhead", tuple(rows), tuple(notes))
