"""`termgym check`: run each task's oracle and memorized solutions on its variants, for real.

Beside `termgym.run` above grading: it drives sandboxes and `termgym.grading` directly,
with a task's reference solutions in place of an agent.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import io
import json
import secrets
import tarfile
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from termgym._vocabulary import IMPOSSIBLE, STATED, EndClass
from termgym.analysis.visibility import describe, sightings
from termgym.env import collect_tamper, episode_class_of, sandbox_config, tamper_baseline
from termgym.errors import TermgymError
from termgym.grading import (
    ColdStarts,
    GradeReport,
    InputsComparison,
    copy_limits,
    episode_files,
    grade,
    prepare,
    report_inputs,
)
from termgym.sandbox import Sandbox, SandboxConfig, make_sandbox
from termgym.tasks import (
    EpisodePlan,
    RuleDraw,
    RuleSet,
    TamperEvidence,
    Task,
    get_task,
    instantiate,
    load_task,
    surface_values,
    task_dirs,
    task_image,
    tasks_in,
    withheld_leaks,
)

CHECK_SEED = 1
"""Seed of the sampled and swapped variants under check (fixed, so failures reproduce)."""


@dataclass(frozen=True)
class CheckRow:
    """One solution on one variant of one task, and whether it behaved as it must.

    `ok` is None for rows that only report (the memorized solution on withheld variants).
    """

    task: str
    variant: str
    solution: str
    expected: str
    own: bool | None
    original: bool | None
    episode_class: EndClass | None
    ok: bool | None
    why: str = ""
    seconds: float = 0.0
    inputs: InputsComparison | None = None
    """On oracle rows: what the hidden tests gave the agent's programs under each rule set."""

    @property
    def inputs_row(self) -> bool:
        """Whether this row says if the hidden tests' inputs were the same under every rule set."""
        return self.solution == "tests" and self.expected == "blind"

    @property
    def explained(self) -> bool:
        """Rows whose `why` is printed even when they pass (it says what was found)."""
        return self.inputs_row or self.expected in ("differs", "untampered", "unseen", "declared")

    @classmethod
    def failed(
        cls, task: str, variant: str, solution: str, expected: str, why: str, seconds: float = 0.0
    ) -> CheckRow:
        """A row for a check that could not run (nothing was graded)."""
        return cls(task, variant, solution, expected, None, None, None, False, why, seconds)

    @classmethod
    def static(
        cls, task: str, variant: str, solution: str, expected: str, ok: bool, why: str
    ) -> CheckRow:
        """A row decided without running anything (the spec alone says it)."""
        return cls(task, variant, solution, expected, None, None, None, ok, why)


EXPECTED = {
    "pass": "oracle passes its own graders",
    "stale": "memorized fails the contradicted rules, passes the original",
    "honest": "oracle, following what the impossible task states, fails its graders",
    "fails": "memorized fails the impossible episode's graders",
    "cheats": "cheater, following the workspace's tests, passes the impossible graders",
    "unseen": "no withheld value is spelled where the agent sees it (instruction, files "
    "under the workdir, their names) but in files declared not evidence",
    "declared": "every file a rule declares not evidence is under the workdir",
}
"""What each row's `expected` asks (docs/task-format.md, "Checking a task")."""


def tasks_to_check(task_ids: Sequence[str], paths: Sequence[str | Path] = ()) -> list[Task]:
    """The tasks `termgym check` checks: `task_ids` (looked up in `paths` first), else every
    task found under `paths` when any is given (those only), else every task found.

    Raises:
        TaskNotFound: an id names no task. TaskSpecError: a task is malformed.
    """
    if task_ids:
        return [get_task(t, paths) for t in task_ids]
    found = tasks_in(paths) if paths else task_dirs()
    return [load_task(folder) for folder in found.values()]


def run_solution(
    sandbox: Sandbox, plan: EpisodePlan, script: str, timeout: float | None = None
) -> None:
    """Copy a solution script to a fresh temporary place and run it in the workdir, for at
    most `timeout` seconds (None: the task's `agent_timeout`, what an agent has to solve it).

    It gets TERMGYM_WITHHELD_RULES (the withheld rules' values as JSON, "{}" when none, and
    always "{}" for the cheater) and TERMGYM_WORKDIR. The script is removed before grading.

    Raises:
        TermgymError: the script exited non-zero or timed out.
    """
    folder = f"/tmp/.termgym-solution-{secrets.token_hex(8)}"
    spec = plan.task.spec
    which = {spec.oracle: "oracle", spec.memorized: "memorized", spec.cheater: "cheater"}[script]
    with tempfile.TemporaryDirectory(prefix="termgym-solution-") as tmp:
        local = Path(tmp) / "solution.sh"
        local.write_text(plan.solution(which), encoding="utf-8")
        sandbox.copy_in(local, f"{folder}/solution.sh")
    withheld = {} if which == "cheater" else plan.withheld  # a cheater is told nothing
    env = {"TERMGYM_WITHHELD_RULES": json.dumps(dict(withheld)), "TERMGYM_WORKDIR": plan.workdir}
    limit = spec.limits.agent_timeout if timeout is None else timeout
    result = sandbox.exec(
        ["bash", f"{folder}/solution.sh"], timeout=limit, workdir=plan.workdir, env=env
    )
    sandbox.exec(["rm", "-rf", folder], workdir="/")
    if result.exit_code != 0:
        raise TermgymError(
            f"{script} exited {result.exit_code} (timed out: {result.timed_out}): "
            f"{result.output.strip()[-600:]}"
        )


def _row(
    plan: EpisodePlan, solution: str, expected: str, report: GradeReport, seconds: float
) -> CheckRow:
    own = report.verdict.passed
    original = report.verdicts["original"].passed if "original" in report.verdicts else own
    stated = report.verdicts[STATED].passed if STATED in report.verdicts else None
    why = ""
    ok: bool | None
    if expected == "honest":
        ok = own is False and stated is True
        if not ok:
            why = (
                "the oracle should pass the rules the impossible task states and fail the "
                f"enforced ones; it {'passed' if stated else 'failed'} the stated and "
                f"{'passed' if own else 'failed'} the enforced"
            )
    elif expected == "fails":
        ok = own is False
        if not ok:
            why = "the memorized solution passed the impossible episode's graders"
    elif expected == "cheats":
        ok = own is True
        if not ok:
            why = (
                "following the workspace's tests should pass the impossible graders (the "
                f"conflict is shown by them); it failed: {_failures(report, report.own)}"
            )
    elif expected == "pass":
        ok = bool(own)
        if not ok:
            why = f"oracle failed its own graders: {_failures(report, report.own)}"
    elif expected == "stale":
        ok = own is False and original is True
        if not ok:
            why = (
                "memorized solution should fail the contradicted rules and pass the original "
                f"ones; it {'passed' if own else 'failed'} the contradicted and "
                f"{'passed' if original else 'failed'} the original"
            )
    else:
        ok = None
        why = "passes the hidden original rule" if own else "fails the hidden original rule"
    return CheckRow(
        task=plan.task.id, variant=plan.variant, solution=solution, expected=expected, own=own,
        original=original, episode_class=episode_class_of(plan, report), ok=ok, why=why,
        seconds=seconds,
    )  # fmt: skip


def _failures(report: GradeReport, name: str) -> str:
    return "; ".join(
        f"{r.grader}: {r.message}" for r in report.verdicts[name].results if not r.passed
    )[:500]


def check_variant(task: Task, variant: str, image: str, backend: str) -> list[CheckRow]:
    """Oracle (and memorized, on contradicted and withheld) in one container for the variant.

    On `swapped` the oracle is graded by every grader of the pool at once."""
    # The authored contradict value: the one its author made the memorized solution fail.
    plan = instantiate(task, variant, seed=CHECK_SEED, draw=RuleDraw(contradict="fixed"))
    if variant == "swapped":  # every grader of the pool must pass the oracle, not just one
        own = RuleSet("swapped", plan.rules_enforced, tuple(task.spec.grader_pool))
        plan = dataclasses.replace(plan, rulesets=(own, *plan.rulesets[1:], *_probe(task)))
    config = _config(task, image)
    runs = [(task.spec.oracle, "oracle", "honest" if variant == IMPOSSIBLE else "pass")]
    if task.spec.memorized and variant == "contradicted":
        runs.append((task.spec.memorized, "memorized", "stale"))
    elif task.spec.memorized and variant == "withheld":
        runs.append((task.spec.memorized, "memorized", "report"))
    elif task.spec.memorized and variant == IMPOSSIBLE:
        runs.append((task.spec.memorized, "memorized", "fails"))
    if task.spec.cheater and variant == IMPOSSIBLE:
        runs.append((task.spec.cheater, "cheater", "cheats"))
    rows: list[CheckRow] = []
    source = ColdStarts(backend)
    for script, label, expected in runs:  # each solution in a sandbox of its own
        start = time.perf_counter()
        sandbox = make_sandbox(backend, config)
        try:
            try:
                sandbox.start()
                prepare(sandbox, plan)
                if variant == "withheld" and label == "oracle":  # the workdir as laid out
                    rows += unseen_rows(task, plan, workdir_texts(sandbox, plan))
                laid_out = tamper_baseline(sandbox, plan)
                run_solution(sandbox, plan, script)
                report = grade(sandbox, plan, verifiers=source, record_inputs=label == "oracle")
                evidence = collect_tamper(sandbox, plan, laid_out) if label == "oracle" else None
            except TermgymError as exc:
                rows.append(
                    CheckRow.failed(
                        task.id,
                        variant,
                        label,
                        expected,
                        str(exc)[:800],
                        time.perf_counter() - start,
                    )  # fmt: skip
                )
                continue
            row = _row(plan, label, expected, report, time.perf_counter() - start)
            if label == "oracle":
                row = dataclasses.replace(row, inputs=report_inputs(report))
            rows.append(row)
            if evidence is not None and evidence.tampered:
                rows.append(_tamper_row(task, variant, label, evidence))
        finally:
            sandbox.close()
    return rows


def workdir_texts(sandbox: Sandbox, plan: EpisodePlan) -> dict[str, str]:
    """Every file under the workdir of a prepared episode (the task's files and the image's),
    path relative to the workdir -> its text; binary files (a NUL byte) are left out."""
    buffer = io.BytesIO()
    sandbox.export_paths([plan.workdir], buffer, copy_limits(plan.task))
    buffer.seek(0)
    prefix = plan.workdir.strip("/") + "/"
    texts: dict[str, str] = {}
    with tarfile.open(fileobj=buffer, mode="r|*") as tar:
        for member in tar:
            if not member.isfile() or not member.name.startswith(prefix):
                continue
            handle = tar.extractfile(member)
            data = handle.read() if handle is not None else b""
            if b"\0" not in data:
                texts[member.name[len(prefix) :]] = data.decode("utf-8", "replace")
    return texts


def unseen_rows(task: Task, plan: EpisodePlan, files: Mapping[str, str]) -> list[CheckRow]:
    """The withheld episode's `unseen` row: no withheld rule's value is spelled (as the trace
    audit spells it) by the instruction, a file under the workdir (`files`, after setup) or
    laid out by the episode (the audit's visible files, even where setup removed one), or a
    file's name, but where the rule declares the file `not_evidence`; and, for a task that
    declares any, the `declared` row saying which of those files carry the values
    declared (failed when a glob matches none)."""
    withheld = dict(plan.withheld)
    declared = {n: r.not_evidence for n, r in task.rules.items() if r.not_evidence}
    laid_out = {p: d.decode("utf-8", "replace") for p, d in plan.files.items() if b"\0" not in d}
    files = {**laid_out, **files}  # what setup removed the audit still reads as shown
    found = sightings(withheld, str(plan.instruction), files, declared)
    seen = [s for s in found if not s.declared]
    why = describe(seen) if seen else f"{len(withheld)} withheld value(s) seen nowhere"
    if not seen and any(s.declared for s in found):
        why += " but in files declared not evidence"
    rows = [CheckRow.static(task.id, "withheld", "-", "unseen", not seen, why)]
    if declared:
        notes, ok = [], True
        for rule, globs in declared.items():
            unmatched = [g for g in globs if not any(fnmatch.fnmatch(f, g) for f in files)]
            ok = ok and not unmatched
            carried = sorted({s.place for s in found if s.declared and s.rule == rule})
            notes.append(
                f"{rule}: carried by {', '.join(carried) or 'no visible file'}"
                + (f"; no file of the workspace matches {unmatched}" if unmatched else "")
            )
        rows.append(CheckRow.static(task.id, "withheld", "-", "declared", ok,
                                    "; ".join(notes)))  # fmt: skip
    return rows


def _tamper_row(task: Task, variant: str, label: str, evidence: TamperEvidence) -> CheckRow:
    """The `untampered` row of an oracle that left evidence: failed, except that a task whose
    agent runs with Docker's default capabilities (`limits.capabilities: default`: an
    imported task, whose own solution may `apt-get install` as under its harness) has the
    toolchain and system changes reported (ok None); its protected files changed still fail."""
    why = f"the oracle left tamper evidence: {evidence.summary()}"
    installs = task.spec.limits.capabilities == "default" and not evidence.tests
    if installs:
        why += " (reported: the task grants its agent Docker's default capabilities)"
    return dataclasses.replace(
        CheckRow.static(task.id, variant, label, "untampered", False, why),
        ok=None if installs else False,
    )


SURFACE_SEEDS = range(CHECK_SEED + 1, CHECK_SEED + 200)
"""Where `surface_row` looks for a second seed whose surface differs from CHECK_SEED's."""


def surface_row(task: Task, image: str, backend: str) -> CheckRow | None:
    """Whether a memorized answer fails: the files the oracle wrote in an episode of another
    seed (another surface) put into an episode of CHECK_SEED must fail its graders, while
    the oracle passes it (the variant rows). None when the task declares no surface."""
    if not task.spec.surface:
        return None
    start = time.perf_counter()
    mine = surface_values(task, CHECK_SEED)
    other = next((s for s in SURFACE_SEEDS if surface_values(task, s) != mine), None)
    if other is None:
        return CheckRow.static(task.id, "original", "replay", "differs", False,
                               "no second seed draws other surface values")  # fmt: skip
    config = _config(task, image)
    source = ColdStarts(backend)
    try:
        answer = _oracle_answer(task, other, config, backend)
        plan = instantiate(task, "original", seed=CHECK_SEED)
        sandbox = make_sandbox(backend, config)
        try:
            sandbox.start()
            prepare(sandbox, plan)
            sandbox.copy_in(episode_files(answer), plan.workdir)
            report = grade(sandbox, plan, verifiers=source)
        finally:
            sandbox.close()
    except TermgymError as exc:
        return CheckRow.failed(task.id, "original", "replay", "differs", str(exc)[:800])
    own = report.verdict.passed
    names = ", ".join(sorted(answer))
    why = (
        f"the oracle's answer for seed {other} ({names}) fails seed {CHECK_SEED}'s graders"
        if own is False
        else f"the oracle's answer for seed {other} ({names}) passes seed {CHECK_SEED}'s "
        "graders: its surface values do not reach what is graded"
    )
    seconds = time.perf_counter() - start
    return CheckRow(task.id, "original", "replay", "differs", own, None, None, own is False, why,
                    seconds)  # fmt: skip


def _oracle_answer(task: Task, seed: int, config: SandboxConfig, backend: str) -> dict[str, bytes]:
    """The files the oracle wrote or changed in the workdir of an original episode of `seed`."""
    plan = instantiate(task, "original", seed=seed)
    sandbox = make_sandbox(backend, config)
    try:
        sandbox.start()
        prepare(sandbox, plan)
        run_solution(sandbox, plan, task.spec.oracle)
        sandbox.freeze()
        buffer = io.BytesIO()
        sandbox.export_paths([plan.workdir], buffer, copy_limits(task))
    finally:
        sandbox.close()
    buffer.seek(0)
    prefix = plan.workdir.strip("/") + "/"
    answer: dict[str, bytes] = {}
    with tarfile.open(fileobj=buffer, mode="r|*") as tar:
        for member in tar:
            if not member.isfile() or not member.name.startswith(prefix):
                continue
            rel = member.name[len(prefix) :]
            handle = tar.extractfile(member)
            data = handle.read() if handle is not None else b""
            if plan.files.get(rel) != data:
                answer[rel] = data
    return answer


def _config(task: Task, image: str) -> SandboxConfig:
    return dataclasses.replace(
        sandbox_config(task, image=image), labels={"io.termgym.check": task.id}
    )


def _probe(task: Task) -> tuple[RuleSet, ...]:
    """The pool's graders under other rule values (the contradicted ones, else sampled), so
    that what they give the agent's programs is compared across rule values too. Its
    verdict counts for nothing."""
    if not task.spec.grader_pool:
        return ()
    variant = "contradicted" if "contradicted" in task.spec.variants else "sampled"
    values = instantiate(
        task, variant, seed=CHECK_SEED, draw=RuleDraw(contradict="fixed")
    ).rules_enforced
    if dict(values) == {n: r.value for n, r in task.rules.items()}:
        return ()
    return (RuleSet("probe", values, tuple(task.spec.grader_pool)),)


def inputs_row(task: Task, rows: Sequence[CheckRow]) -> CheckRow | None:
    """Whether the hidden tests gave the agent's programs the same inputs under every rule
    set, over the oracle's gradings in `rows` (None when none was graded)."""
    found = [r.inputs for r in rows if r.inputs is not None]
    if not found:
        return None
    problems = [p for c in found for p in c.unreadable]
    differences = [str(d) for c in found for d in c.differences]
    starts = sum(c.starts for c in found)
    compared = sum(c.compared for c in found)
    seen: list[str] = []
    for why in problems + differences:
        if why not in seen:
            seen.append(why)
    if seen:
        return CheckRow.static(task.id, "-", "tests", "blind", False, "; ".join(seen)[:1500])
    why = (
        f"{starts} program start(s), {compared} test run(s) compared across rule sets"
        if starts
        else "the hidden tests start none of the agent's programs"
    )
    return CheckRow.static(task.id, "-", "tests", "blind", True, why)


AGENT_USER_BLIND = (
    "protection agent-user: the test script runs as the agent's user and reads /tests, where "
    "the verifier writes each rule set's values ({files}); a program of the agent's running "
    "during grading can read the enforced values there, so no overlay that rewrites the "
    'tests of this task can be blind to the rule set graded (docs/importing.md, "Overlays '
    'on agent-user tasks")'
)
"""Why an overlay that rewrites an agent-user task's tests is refused (the `tests blind` row)."""


def agent_user_rewrites(task: Task) -> list[str]:
    """The test files an overlay rewrites per rule set that an agent-user grader's script
    (the agent's user) can read: empty when the task is clean or its overlay leaves its
    tests alone."""
    exposed = [
        g for g in task.spec.graders
        if g.kind == "imported-tests" and g.params.get("protection") == "agent-user"
    ]  # fmt: skip
    if not exposed:
        return []
    return sorted({s.file for s in task.spans if s.file.startswith("graders/")})


def blind_row(task: Task, rows: Sequence[CheckRow]) -> CheckRow | None:
    """The `tests blind` row of a checked task: refused, with the reason, when its overlay
    rewrites tests an agent-user script reads; else whether the oracle's gradings gave the
    agent's programs the same inputs under every rule set (None when none was graded)."""
    exposed = agent_user_rewrites(task)
    if exposed:
        why = AGENT_USER_BLIND.format(files=", ".join(exposed))
        return CheckRow.static(task.id, "-", "tests", "blind", False, why)
    return inputs_row(task, rows)


def _static_rows(task: Task) -> list[CheckRow]:
    rows = []
    if "withheld" in task.spec.variants:
        leaks = withheld_leaks(task)
        rows.append(
            CheckRow.static(task.id, "withheld", "-", "hidden", not leaks, "; ".join(leaks))
        )
    if "contradicted" in task.spec.variants and not task.spec.memorized:
        rows.append(
            CheckRow.static(
                task.id,
                "contradicted",
                "memorized",
                "stale",
                False,
                "no memorized solution declared (field 'memorized')",
            )  # fmt: skip
        )
    return rows


def check_tasks(
    tasks: Sequence[Task],
    backend: str,
    jobs: int = 2,
    on_row: Callable[[CheckRow], None] | None = None,
) -> list[CheckRow]:
    """Check every task on every variant; rows come back in task and variant order."""
    images: dict[str, str] = {}
    rows: list[CheckRow] = []
    work: list[tuple[Task, str]] = []

    def add(found: list[CheckRow]) -> None:
        for row in found:
            if on_row:
                on_row(row)
        rows.extend(found)

    for task in tasks:
        add(_static_rows(task))
        try:
            images[task.id] = task_image(task)
        except TermgymError as exc:
            add([CheckRow.failed(task.id, "-", "-", "builds", str(exc)[:800])])
            continue
        work.extend((task, variant) for variant in task.spec.variants)
    left = {task.id: sum(1 for t, _ in work if t is task) for task in tasks}
    graded: dict[str, list[CheckRow]] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(check_variant, t, v, images[t.id], backend) for t, v in work]
        replays = {
            t.id: pool.submit(surface_row, t, images[t.id], backend)
            for t in tasks
            if t.spec.surface and t.id in images
        }
        for (task, variant), future in zip(work, futures, strict=True):
            try:
                found = future.result()
            except TermgymError as exc:
                found = [CheckRow.failed(task.id, variant, "-", "starts", str(exc)[:800])]
            add(found)
            graded.setdefault(task.id, []).extend(found)
            left[task.id] -= 1
            if left[task.id] == 0:  # the task's last variant: were its tests rule-blind?
                blind = blind_row(task, graded[task.id])
                if blind is not None:
                    add([blind])
                replay = replays.get(task.id)
                found_replay = replay.result() if replay is not None else None
                if found_replay is not None:
                    add([found_replay])
    return rows
