"""Prepare a sandbox for an episode and grade its frozen final state, shadows included."""

from __future__ import annotations

import base64
import io
import json
import secrets
import shutil
import tarfile
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from termgym.errors import GraderError, TaskError
from termgym.grading._base import Grader, JobOutput, Outcome
from termgym.grading._registry import grader_kind
from termgym.grading._verdict import GradeReport, GraderResult, Verdict, classify
from termgym.sandbox import Sandbox
from termgym.tasks import EpisodePlan, RuleSet, Task
from termgym.tasks._spec import GraderSpec

_RUNNER = Path(__file__).with_name("_sandbox_runner.py")
GRADE_DIR_PREFIX = "/tmp/.termgym-grade-"
"""Grader files go to a fresh directory named after this prefix and a random token."""


def write_tree(folder: Path, files: dict[str, bytes] | Any, modes: Task | None = None) -> None:
    """Write `files` (relative path -> bytes) under `folder`, keeping the task files' modes."""
    for rel, content in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        if modes is not None:
            source = modes.root / modes.spec.files / rel
            if source.exists():
                target.chmod(source.stat().st_mode & 0o777)


def prepare(sandbox: Sandbox, plan: EpisodePlan, timeout: float = 300.0) -> None:
    """Copy the episode's rendered files into the workdir and run the task's setup.

    Raises:
        TaskError: a setup command failed (its output is in the message).
    """
    if plan.files:
        with tempfile.TemporaryDirectory(prefix="termgym-files-") as tmp:
            write_tree(Path(tmp), plan.files, modes=plan.task)
            sandbox.copy_in(Path(tmp), plan.workdir)
    if plan.setup:
        script = "set -e\n" + "\n".join(plan.setup) + "\n"
        result = sandbox.exec(["bash", "-c", script], timeout=timeout, workdir=plan.workdir)
        if result.exit_code != 0:
            raise TaskError(
                f"task {plan.task.id!r}: setup failed (exit {result.exit_code}, "
                f"timed out: {result.timed_out}):\n{result.output.strip()[-1500:]}"
            )


def grade(
    sandbox: Sandbox, plan: EpisodePlan, shadow: bool = True, freeze: bool = True
) -> GradeReport:
    """Freeze the sandbox and judge its final state under the episode's rules and the shadows.

    Args:
        sandbox: The episode's sandbox (frozen here unless `freeze` is False).
        plan: The episode's plan from `instantiate`.
        shadow: Also grade under the original rules (and graders) when the variant differs.
        freeze: Call `sandbox.freeze()` first; pass False only if it is already frozen.

    Raises:
        GraderError: a grader crashed or timed out (never reported as a score of 0); the
            partial report is on the exception's `report` attribute.
    """
    start = time.perf_counter()
    if freeze:
        sandbox.freeze()
    frozen = time.perf_counter()
    rulesets = plan.rulesets if shadow else plan.rulesets[:1]
    verdicts, timings = grade_rulesets(sandbox, plan.task, rulesets)
    own = plan.rulesets[0].name
    episode_class = None
    if plan.variant != "original" and "original" in verdicts:
        episode_class = classify(verdicts[own].passed, verdicts["original"].passed)
    timings = {"freeze": frozen - start, **timings, "total": time.perf_counter() - start}
    report = GradeReport(
        variant=plan.variant,
        own=own,
        verdicts=verdicts,
        episode_class=episode_class,
        timings=timings,
    )
    if report.errors:
        error = GraderError(
            f"task {plan.task.id!r} ({plan.variant}): grading failed: " + " | ".join(report.errors)
        )
        error.report = report  # type: ignore[attr-defined]
        raise error
    return report


def _canonical(rulesets: Sequence[RuleSet]) -> dict[str, dict[str, str]]:
    """grader name -> {rule-set name -> the first rule set giving that grader the same values}."""
    out: dict[str, dict[str, str]] = {}
    firsts: dict[tuple[str, str], str] = {}
    for ruleset in rulesets:
        key = json.dumps(dict(ruleset.rules), sort_keys=True, default=str)
        for spec in ruleset.graders:
            first = firsts.setdefault((spec.name, key), ruleset.name)
            out.setdefault(spec.name, {})[ruleset.name] = first
    return out


def grade_rulesets(
    sandbox: Sandbox, task: Task, rulesets: Sequence[RuleSet]
) -> tuple[dict[str, Verdict], dict[str, float]]:
    """Run every grader of every rule set in ONE exec inside the (frozen) sandbox.

    Grader files and a small runner go to a fresh random directory; each run writes to a
    fresh result directory the runner creates, so nothing the agent left can pass for a
    result. Rule sets with the same values share one run per grader.
    """
    start = time.perf_counter()
    specs: dict[str, GraderSpec] = {}
    for ruleset in rulesets:
        for spec in ruleset.graders:
            specs.setdefault(spec.name, spec)
    canonical = _canonical(rulesets)
    values = {r.name: dict(r.rules) for r in rulesets}
    default_timeout = task.spec.limits.grading_timeout
    token = secrets.token_hex(16)
    dest = GRADE_DIR_PREFIX + secrets.token_hex(12)
    jobs: list[dict[str, Any]] = []
    kinds: dict[str, Grader] = {}
    budget = 30.0
    with tempfile.TemporaryDirectory(prefix="termgym-grade-") as tmp:
        folder = Path(tmp)
        if (task.root / "graders").is_dir():
            shutil.copytree(task.root / "graders", folder / "graders")
        for name, spec in specs.items():
            kinds[name] = grader_kind(spec.kind)
            job = kinds[name].job(spec, task.root)
            write_tree(folder, dict(job.files))
            targets = sorted(set(canonical[name].values()), key=list(values).index)
            # A batch runs every rule set in one go: its timeout covers them all.
            timeout = (spec.timeout or default_timeout) * (len(targets) if job.batch else 1)
            budget += timeout * (1 if job.batch and not job.call else len(targets))
            jobs.append(
                {
                    "id": name,
                    "argv": list(job.argv),
                    "call": job.call,
                    "kwargs": dict(job.kwargs),
                    "env": dict(job.env),
                    "batch": job.batch,
                    "timeout": timeout,
                    "rulesets": targets,
                }
            )
        manifest = {"token": token, "workdir": task.spec.workdir, "rulesets": values, "jobs": jobs}
        (folder / "manifest.json").write_text(json.dumps(manifest))
        shutil.copy(_RUNNER, folder / "termgym_run.py")
        argv, env = _launch(sandbox, folder, dest)
    injected = time.perf_counter()
    result = sandbox.exec(argv, timeout=budget, workdir="/", env=env)
    ran = time.perf_counter()
    runs = _parse(result.output, token)
    verdicts = {}
    for ruleset in rulesets:
        results = []
        for spec in ruleset.graders:
            target = canonical[spec.name][ruleset.name]
            if runs is None:
                error = (
                    f"the grading run timed out after {budget:.0f}s"
                    if result.timed_out
                    else f"the grading run failed (exit {result.exit_code}): "
                    f"{result.output.strip()[-800:]}"
                )
                results.append(
                    GraderResult(
                        spec.name, spec.kind, ruleset.name, None, None, spec.weight, error=error
                    )
                )
                continue
            results.append(
                _judge(kinds[spec.name], spec, runs.get(spec.name, []), target, ruleset.name)
            )
        verdicts[ruleset.name] = Verdict(ruleset.name, dict(ruleset.rules), tuple(results))
    timings = {"inject": injected - start, "run": ran - injected, "read": time.perf_counter() - ran}
    return verdicts, timings


_BOOTSTRAP = """\
import base64, io, os, runpy, sys, tarfile
folder = sys.argv[1]
os.mkdir(folder, 0o700)
data = base64.b64decode(os.environ.pop("TERMGYM_GRADE_PAYLOAD"))
tarfile.open(fileobj=io.BytesIO(data)).extractall(folder)
sys.argv = [folder + "/termgym_run.py", folder + "/manifest.json"]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
PAYLOAD_LIMIT = 100_000
"""Grader folders up to this size (base64 of the gzipped tar) travel inside the one exec."""


def _launch(sandbox: Sandbox, folder: Path, dest: str) -> tuple[list[str], dict[str, str]]:
    """How to start the runner: small grader folders ride in the exec's environment (one
    round trip), bigger ones are copied in first."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        tar.add(folder, arcname=".")
    payload = base64.b64encode(buffer.getvalue()).decode("ascii")
    if len(payload) <= PAYLOAD_LIMIT:
        # -I: neither the current directory nor PYTHON* variables reach the bootstrap.
        return ["python3", "-I", "-c", _BOOTSTRAP, dest], {"TERMGYM_GRADE_PAYLOAD": payload}
    sandbox.copy_in(folder, dest)
    return ["python3", "-I", f"{dest}/termgym_run.py", f"{dest}/manifest.json"], {}


def _parse(output: str, token: str) -> dict[str, list[dict[str, Any]]] | None:
    for line in output.splitlines():
        if line.startswith(token):
            payload = json.loads(zlib.decompress(base64.b64decode(line[len(token) :])))
            return {job["id"]: job["runs"] for job in payload}
    return None


def _judge(
    kind: Grader, spec: GraderSpec, runs: list[dict[str, Any]], target: str, ruleset: str
) -> GraderResult:
    run = next((r for r in runs if target in r["rulesets"]), None)
    if run is None:
        return GraderResult(
            spec.name,
            spec.kind,
            ruleset,
            None,
            None,
            spec.weight,
            error=f"no run of grader {spec.name!r} for rule set {target!r}",
        )
    output = JobOutput(
        rulesets=tuple(run["rulesets"]),
        exit_code=run.get("exit_code"),
        timed_out=bool(run.get("timed_out")),
        duration=float(run["duration"]),
        output=run.get("output", ""),
        files=run.get("files", {}),
        value=run.get("value"),
        error=run.get("error"),
    )
    try:
        outcome: Outcome = kind.read(spec, output)[target]
    except Exception as exc:  # noqa: BLE001 - a broken plugin is an infrastructure error too
        error = (
            str(exc)
            if isinstance(exc, GraderError)
            else f"grader kind {spec.kind!r} could not read its run: {exc!r}"
        )
        return GraderResult(
            spec.name,
            spec.kind,
            ruleset,
            None,
            None,
            spec.weight,
            duration=output.duration,
            error=error,
        )
    return GraderResult(
        spec.name,
        spec.kind,
        ruleset,
        outcome.score,
        outcome.passed,
        spec.weight,
        message=outcome.message,
        duration=output.duration,
        details=dict(outcome.details),
    )
