"""What a grading runs: one job per grader over the rule sets that differ, and its manifest."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from termgym.errors import TaskError
from termgym.kinds import Grader, GraderSpec, make_grader
from termgym.tasks import RuleSet, Task

BUDGET_SLACK = 30.0
"""Seconds the whole run gets on top of its jobs' timeouts (interpreter start, copies)."""


class JobEntry(TypedDict):
    """One grader's job as the runner reads it (termgym/verifier/runner.py)."""

    id: str
    argv: list[str]
    call: str | None
    kwargs: dict[str, Any]
    env: dict[str, str]
    batch: bool
    timeout: float
    rulesets: list[str]


class Manifest(TypedDict):
    """The runner's input: the workdir and the other paths of the work (writable in the
    nests the agent's programs run in), every rule set's values, the jobs."""

    workdir: str
    work: list[str]
    rulesets: dict[str, dict[str, Any]]
    jobs: list[JobEntry]
    record_inputs: bool
    in_place: bool
    snapshot: str


@dataclass(frozen=True)
class GradingPlan:
    """What a grading runs, decided on the host before anything starts.

    Attributes:
        manifest: The runner's input.
        files: Support files of the grader kinds (name -> content), beside the task's graders.
        budget: Seconds the whole run may take.
        kinds: Grader name -> its kind's implementation (reads the run's results).
        canonical: Grader name -> {rule set -> the first rule set giving it the same values}:
            rule sets with equal values share one run.
    """

    manifest: Manifest
    files: Mapping[str, bytes]
    budget: float
    kinds: Mapping[str, Grader]
    canonical: Mapping[str, Mapping[str, str]]


def canonical_rulesets(rulesets: Sequence[RuleSet]) -> dict[str, dict[str, str]]:
    """grader name -> {rule-set name -> the first rule set giving that grader the same values}."""
    out: dict[str, dict[str, str]] = {}
    firsts: dict[tuple[str, str], str] = {}
    for ruleset in rulesets:
        key = json.dumps(dict(ruleset.rules), sort_keys=True, default=str)
        for spec in ruleset.graders:
            first = firsts.setdefault((spec.name, key), ruleset.name)
            out.setdefault(spec.name, {})[ruleset.name] = first
    return out


def plan_grading(
    task: Task,
    rulesets: Sequence[RuleSet],
    *,
    record_inputs: bool = False,
    in_place: bool = False,
    snapshot: str = "",
) -> GradingPlan:
    """The jobs of every grader of `rulesets` (each grader's spec taken from the first).

    `record_inputs`: fingerprint what each of the agent's programs is given (`termgym check`
    compares them across rule sets; `termgym.grading._inputs`). `in_place`: the plan of a
    grading in the sandbox that holds the state (`grade_rulesets`), whose runner stays open.
    `snapshot`: where the verifier finds the agent's whole filesystem (snapshot grading),
    whose graders all run as programs there (a kind that reads the work in the runner's
    process cannot).

    Raises:
        TaskError: snapshot grading with a grader whose kind runs in the runner's process.
    """
    specs: dict[str, GraderSpec] = {}
    for ruleset in rulesets:
        for spec in ruleset.graders:
            specs.setdefault(spec.name, spec)
    canonical = canonical_rulesets(rulesets)
    values = {r.name: dict(r.rules) for r in rulesets}
    default_timeout = task.spec.limits.grading_timeout
    jobs: list[JobEntry] = []
    kinds: dict[str, Grader] = {}
    files: dict[str, bytes] = {}
    budget = BUDGET_SLACK
    for name, spec in specs.items():
        kinds[name] = make_grader(spec.kind)
        job = kinds[name].job(spec, task.root)
        if snapshot and job.call:
            raise TaskError(
                f"task {task.id!r}: grading.filesystem: snapshot runs graders as programs on "
                f"the agent's filesystem; grader {name!r} (kind {spec.kind!r}) reads the work "
                "in the runner's process: use kinds pytest, script or imported-tests, or "
                "grading.filesystem: work"
            )
        files.update(job.files)
        targets = sorted(set(canonical[name].values()), key=list(values).index)
        # A batch runs every rule set in one go: its timeout covers them all.
        timeout = (spec.timeout or default_timeout) * (len(targets) if job.batch else 1)
        budget += timeout * (1 if job.batch and not job.call else len(targets))
        jobs.append(
            JobEntry(
                id=name,
                argv=list(job.argv),
                call=job.call,
                kwargs=dict(job.kwargs),
                env=dict(job.env),
                batch=job.batch,
                timeout=timeout,
                rulesets=targets,
            )
        )
    manifest = Manifest(
        workdir=task.spec.workdir,
        work=[task.spec.workdir, *task.spec.grading.state],
        rulesets=values,
        jobs=jobs,
        record_inputs=record_inputs,
        in_place=in_place,
        snapshot=snapshot,
    )
    return GradingPlan(manifest, files, budget, kinds, canonical)
