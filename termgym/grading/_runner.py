"""Prepare a sandbox for an episode, and grade its final state in a clean verifier."""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import signal
import tarfile
import time
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

from termgym._vocabulary import IMPOSSIBLE
from termgym.errors import (
    ArchiveTooLarge,
    EngineError,
    GraderError,
    InfrastructureError,
    SandboxCrashed,
    SandboxError,
    SandboxStartError,
    TaskError,
)
from termgym.grading._bundle import (
    AGENT_CODE,
    CHANGED,
    GRADED,
    LISTED_ALL,
    LISTED_SINCE,
    WATCHED,
    GradingFolder,
    new_folder,
    write_bundle,
    write_folder,
)
from termgym.grading._plan import GradingPlan, plan_grading
from termgym.grading._report import RunnerReport, new_key, read_report
from termgym.grading._standby import ENV, Preparation, go, preparation_for, standby_spec
from termgym.grading._starts import RECORD, parse_starts
from termgym.grading._verdict import GradeReport, GraderResult, Verdict, classify
from termgym.grading._verifier import ColdStarts, SandboxSource, verifier_config
from termgym.kinds import Grader, GraderSpec, JobOutput, Outcome, tail
from termgym.sandbox import (
    CHANGED_LIMIT,
    SNAPSHOT_PATH,
    CopyLimits,
    FileTree,
    HoleSpool,
    RunResult,
    Sandbox,
    SandboxConfig,
    StandbyProgram,
    StandbySpec,
    VerifierSandbox,
    as_verifier,
    check_verifier,
    list_changes,
)
from termgym.tasks import EpisodePlan, RuleSet, Task


def episode_files(files: dict[str, bytes] | Any, modes: Task | None = None) -> FileTree:
    """An episode's rendered `files` (relative path -> bytes) as a FileTree: each with its
    task file's mode (`modes`: the task whose files/ they were rendered from; 0644 where it
    has none)."""
    tree = {}
    for rel, content in files.items():
        mode = 0o644
        if modes is not None:
            source = modes.root / modes.spec.files / rel
            if source.exists():
                mode = source.stat().st_mode & 0o777
        tree[rel] = (content, mode)
    return FileTree(tree)


def prepare(sandbox: Sandbox, plan: EpisodePlan, timeout: float = 300.0) -> None:
    """Copy the episode's rendered files into the workdir and run the task's setup.

    Raises:
        TaskError: a setup command failed (its output is in the message).
    """
    if plan.files:
        sandbox.copy_in(episode_files(plan.files, modes=plan.task), plan.workdir)
    if plan.setup:
        script = "set -e\n" + "\n".join(plan.setup) + "\n"
        result = sandbox.exec(["bash", "-c", script], timeout=timeout, workdir=plan.workdir)
        if result.exit_code != 0:
            raise TaskError(
                f"task {plan.task.id!r}: setup failed (exit {result.exit_code}, "
                f"timed out: {result.timed_out}):\n{tail(result.output, 1500)}"
            )


def grade(
    sandbox: Sandbox,
    plan: EpisodePlan,
    shadow: bool = True,
    *,
    verifiers: SandboxSource | None = None,
    record_inputs: bool = False,
    standby: bool | None = None,
) -> GradeReport:
    """Judge the agent's final state in a clean verifier, under the episode's rules and the shadows.

    The agent's sandbox is frozen first (in live mode, after grading), its workdir and the
    task's `grading.state` paths are copied out, and everything else happens in a fresh
    sandbox of the task's clean image (`docs/security.md`).

    Args:
        sandbox: The episode's sandbox.
        plan: The episode's plan from `instantiate`.
        shadow: Also grade under the original rules (and graders) when the variant differs.
        verifiers: Where verifier sandboxes come from (a warm pool); None starts one cold.
        record_inputs: Fingerprint what each program the graders start as the agent's user
            is given (on each GraderResult's `starts`; `termgym check` compares them).
        standby: Hand the grading to a standby runner started with the verifier (None:
            where the backend declares `Capabilities.standby`; False: a cold exec of the
            runner).

    Raises:
        GraderError: grading the agent's final state failed (a grader crashed or hung, the
            work was too big, the report was missing): the agent's failure, scored 0.
            The partial report, if any, is on the exception's `report` attribute.
        InfrastructureError: termgym's machinery failed (engine, image, verifier start).
        SandboxError: the sandbox's backend declares no verifier, or not the part the
            task's grading needs (`Capabilities`), before anything is stopped.
    """
    start = time.perf_counter()
    task = plan.task
    graded_on = as_verifier(sandbox)
    live = task.spec.grading.mode == "live"
    snapshot = task.spec.grading.filesystem == "snapshot"
    _check_grading_needs(graded_on, live=live, snapshot=snapshot)
    timings: dict[str, float] = {}
    if not live:
        _freeze(sandbox)
    timings["freeze"] = time.perf_counter() - start
    rulesets = plan.rulesets if shadow else plan.rulesets[:1]
    with _spool() as work:
        mark = time.perf_counter()
        snapshot_of, changed = _snapshot_of(graded_on) if snapshot else ("", b"")
        if not snapshot:
            _export_work(sandbox, task, work)
        timings["export"] = time.perf_counter() - mark
        source: SandboxSource = verifiers or ColdStarts(
            sandbox.backend, allow_local=sandbox.backend == "local"
        )
        network = _live_network(graded_on) if live else ""
        if (live or snapshot) and verifiers is not None:  # made for this agent's sandbox
            source = ColdStarts(sandbox.backend, allow_local=sandbox.backend == "local")
        try:
            graded = grade_rulesets_in(
                source, _agent_config(sandbox), task, rulesets, work=None if snapshot else work,
                network_of=network, record_inputs=record_inputs, snapshot_of=snapshot_of,
                changed=changed,
                standby=graded_on.capabilities.standby if standby is None else standby,
                zygote=source is verifiers,
            )  # fmt: skip
        except SandboxStartError:
            if live:  # a verifier that could not join a network the agent let go of
                _live_network(graded_on)
            raise
        verdicts = graded.verdicts
        timings.update(graded.timings)
    if live:
        _freeze(sandbox)
    own = plan.rulesets[0].name
    episode_class = None
    if plan.variant != "original" and "original" in verdicts:
        episode_class = classify(verdicts[own].passed, verdicts["original"].passed)
    timings["total"] = time.perf_counter() - start
    report = GradeReport(
        variant=plan.variant,
        own=own,
        verdicts=verdicts,
        episode_class=episode_class,
        timings=timings,
        isolation=graded.isolation,
        filesystem=task.spec.grading.filesystem,
    )
    if report.errors:
        error = GraderError(f"task {task.id!r} ({plan.variant}): grading failed: {report.why}")
        error.report = report
        raise error
    return report


def _check_grading_needs(sandbox: VerifierSandbox, *, live: bool, snapshot: bool) -> None:
    """Refuse a task whose grading needs what the sandbox's backend does not declare."""
    declared = sandbox.capabilities
    if snapshot and not declared.snapshot:  # an EngineError, as the handle's refusal was
        raise EngineError(
            f"could not take the agent's snapshot: snapshot grading (grading.filesystem: "
            f"snapshot) needs a backend that declares Capabilities(snapshot=True), such as "
            f"docker or bwrap; the {sandbox.backend} backend declares {declared}."
        )
    if live and not declared.live:
        raise SandboxError(
            f"Live-state grading (grading.mode: live) needs a backend that declares "
            f"Capabilities(live=True): its verifiers join the agent's network; the "
            f"{sandbox.backend} backend declares {declared}."
        )


def _agent_config(sandbox: Sandbox) -> SandboxConfig:
    config = getattr(sandbox, "config", None)
    if not isinstance(config, SandboxConfig):
        raise TaskError(f"expected a termgym sandbox with a SandboxConfig, found {sandbox!r}")
    return config


def _live_network(sandbox: VerifierSandbox) -> str:
    """The agent's sandbox's network, which live-state verifiers join; gone (its shell or
    container stopped by the agent, its services with it), the live state is: the agent's
    failure, as for work that cannot be copied."""
    try:
        return sandbox.network_handle()
    except InfrastructureError:
        raise
    except SandboxError as exc:
        raise GraderError(f"the agent's live state could not be graded: {exc}") from exc


def _freeze(sandbox: Sandbox) -> None:
    try:
        sandbox.freeze()
    except SandboxCrashed:
        pass  # already stopped: its files are graded as they are
    except InfrastructureError:
        raise
    except SandboxError as exc:
        raise EngineError(f"could not stop the agent's sandbox: {exc}") from exc


@contextlib.contextmanager
def _spool() -> Iterator[BinaryIO]:
    """A temporary file on the host that keeps runs of zeros as holes (the agent's sparse
    files cost no disk while they travel; nothing is held in memory whole)."""
    with HoleSpool() as handle:
        yield handle  # type: ignore[misc]


def copy_limits(task: Task) -> CopyLimits:
    """What one copy of the agent's work may carry: the task's `limits` (docs/task-format.md)."""
    limits = task.spec.limits
    return CopyLimits(
        bytes=limits.disk_mb << 20, files=limits.work_files, depth=limits.work_depth,
        seconds=limits.work_copy_timeout,
    )  # fmt: skip


def _snapshot_of(sandbox: VerifierSandbox) -> tuple[str, bytes]:
    """The frozen agent sandbox's snapshot handle, and the list of what the agent made or
    changed there (`list_changes`: one sandbox path a line, after the header `CHANGED`
    names). A list that is not the whole of it (the scan stopped at its bound: 200,000
    empty files would push the agent's own module out of it; or a backend that cannot list)
    says so, and every file of the snapshot counts as the agent's: closed."""
    began = time.time()  # a live agent's processes still write: what changes after counts
    try:
        handle = sandbox.snapshot_handle()
        changes = list_changes(sandbox, limit=CHANGED_LIMIT, scan=4 * CHANGED_LIMIT)
    except InfrastructureError:
        raise
    except SandboxError as exc:
        raise EngineError(f"could not take the agent's snapshot: {exc}") from exc
    header = [f"{LISTED_SINCE}{began!r}"]
    if changes is None or not changes.exact or changes.truncated:
        header.append(LISTED_ALL)
    names = [c.path for c in (changes.entries if changes else ()) if c.kind != "deleted"]
    return handle, "".join(n + "\n" for n in header + names).encode("utf-8", "surrogateescape")


def _export_work(sandbox: Sandbox, task: Task, out: BinaryIO) -> None:
    """The agent's workdir and declared state paths, as a tar (the agent's failure if not)."""
    paths = [task.spec.workdir, *task.spec.grading.state]
    with _the_agents_failure("graded", "copied out"):
        sandbox.export_paths(paths, out, copy_limits(task))
    out.seek(0)


@contextlib.contextmanager
def _the_agents_failure(too_large: str, broken: str) -> Iterator[None]:
    """A copy of the agent's work that fails on the work (past its limits, unreadable) is
    the agent's failure (GraderError); termgym's own failures pass through."""
    try:
        yield
    except ArchiveTooLarge as exc:
        raise GraderError(f"the agent's work could not be {too_large}: {exc}") from exc
    except InfrastructureError:
        raise
    except (SandboxError, OSError, tarfile.TarError) as exc:
        raise GraderError(f"the agent's work could not be {broken}: {exc}") from exc


def grade_rulesets(
    sandbox: Sandbox, task: Task, rulesets: Sequence[RuleSet]
) -> tuple[dict[str, Verdict], dict[str, float]]:
    """Run every grader of every rule set, in place, in `sandbox` (already holding the work).

    What `grade` does inside its verifier; called directly it grades a sandbox's state
    where it is, with that sandbox's programs, so it is for benchmarks and tests only.
    """
    folder = new_folder()
    key = new_key()
    start = time.perf_counter()
    plan = plan_grading(task, rulesets, in_place=True)
    in_place = as_verifier(sandbox)
    _inject(in_place, task, folder, None, plan)
    injected = time.perf_counter()
    result = _run(sandbox, task, folder, key, plan.budget, _standby_of(in_place))
    ran = time.perf_counter()
    verdicts = _verdicts(_read(result, key, plan, alone=False), rulesets, plan)
    return verdicts, {
        "inject": injected - start,
        "run": ran - injected,
        "read": time.perf_counter() - ran,
    }


@dataclasses.dataclass(frozen=True)
class RulesetGrading:
    """What grading the work under some rule sets found.

    Attributes:
        verdicts: Rule-set name -> its verdict.
        timings: Seconds per phase ("verifier", "inject", "run", "read"), the longest of the
            verifiers that ran side by side.
        isolation: Which of the verifier's defences did not hold (`isolation_gaps`); empty
            when all did.
        runners: Each verifier's runner facts (`RunnerReport`, without its jobs), in the
            order of the rule sets they graded.
    """

    verdicts: dict[str, Verdict]
    timings: dict[str, float]
    isolation: tuple[str, ...] = ()
    runners: tuple[RunnerReport, ...] = ()


def grade_rulesets_in(
    source: SandboxSource,
    agent: SandboxConfig,
    task: Task,
    rulesets: Sequence[RuleSet],
    *,
    work: BinaryIO | None,
    network_of: str = "",
    record_inputs: bool = False,
    standby: bool = False,
    snapshot_of: str = "",
    changed: bytes = b"",
    zygote: bool = False,
) -> RulesetGrading:
    """Grade `work` (a tar of the agent's files) under each of `rulesets`, each in a fresh
    verifier of its own from `source`, at the same time; in live state (`network_of`), one
    after another in `rulesets`' order (the enforced rule set first).

    Every verifier is laid out alike: the same paths, the same names, one rule set called
    GRADED, the work as the agent left it. So the graded program cannot tell which rule set
    it is graded under by anything but the values the tests check (docs/security.md). Rule
    sets that grade alike (the same rule values and graders) share one verifier.

    `standby`: the backend's verifiers keep a standby runner (`Capabilities.standby`); the grading
    goes to it when it waits, else to a cold exec of the runner. The standby is prepared for
    the task (its grading folder unpacked and its jobs loaded before the work arrives:
    `preparation_for`) but on a snapshot or under an engine runtime such as gVisor's (it
    would not see the work copied into a folder it made), and with `zygote` (verifiers from
    a pool) forked
    from a zygote where the backend can. `snapshot_of`: grade the agent's whole filesystem
    (its sandbox's `snapshot_handle()`; `work` is then None), and `changed` lists what the
    agent made or changed there.
    """
    groups = _alike(rulesets)
    # gVisor (a runtime of the engine's) keeps the files its sandbox made in an overlay of
    # its own: a folder the standby unpacked there would hide the work the host copies in
    prepared = standby and not snapshot_of and agent.runtime is None
    config = verifier_config(
        agent, network_of=network_of, snapshot_of=snapshot_of,
        standby=verifier_standby(task, prepared=prepared, zygote=zygote) if standby else None,
    )  # fmt: skip
    with contextlib.ExitStack() as stack:
        bundles = []
        for group in groups:
            plan = plan_grading(
                task, [_renamed(group[0])], record_inputs=record_inputs,
                snapshot=SNAPSHOT_PATH if snapshot_of else "",
            )  # fmt: skip
            held = preparation_for(task) if prepared else None
            folder = held.folder if held is not None else new_folder()
            bundle = stack.enter_context(_spool())
            files = {**plan.files, CHANGED: changed} if snapshot_of else plan.files
            write_bundle(
                bundle, folder, work=_rewound(work), task_graders=task.root / "graders",
                files=files, manifest=plan.manifest, held=held.files if held else None,
            )  # fmt: skip
            bundle.seek(0)
            bundles.append((group, plan, folder, bundle, held))
        # every verifier is given back once all are done: closing one (the engine's work)
        # would compete with the others still grading
        taken: list[Sandbox] = []
        stack.callback(_give_back, source, taken)
        if len(bundles) == 1 or network_of:
            # live state: each rule set's tests reach the agent's running services, which
            # their requests may change (a push a server deploys, a claim it grants once);
            # graded at once, whichever came first would decide the others' verdicts. One
            # after another, the enforced rule set first: its verdict is the agent's state
            # as it was left, and a shadow sees what the gradings before it changed.
            outcomes = [_grade_one(source, config, task, *b, taken=taken) for b in bundles]
        else:
            futures = [
                _EXECUTOR.submit(_grade_one, source, config, task, *b, taken=taken) for b in bundles
            ]
            concurrent.futures.wait(futures)  # every one done with its bundle before any closes
            outcomes = [future.result() for future in futures]
    verdicts: dict[str, Verdict] = {}
    timings: dict[str, float] = {}
    gaps: list[str] = []
    for outcome in outcomes:
        verdicts.update(outcome.verdicts)
        for name, seconds in outcome.timings.items():
            timings[name] = max(timings.get(name, 0.0), seconds)
        gaps += [gap for gap in outcome.isolation if gap not in gaps]
    runners = tuple(r for outcome in outcomes for r in outcome.runners)
    return RulesetGrading(
        {r.name: verdicts[r.name] for r in rulesets}, timings, tuple(gaps), runners
    )


def pooled_verifiers(
    agent: SandboxConfig, backend: str, plan: EpisodePlan, shadow: bool = True
) -> tuple[SandboxConfig, int] | None:
    """The verifier configuration `grade(sandbox, plan, shadow, verifiers=POOL)` will take
    from a pool for an agent's sandbox of configuration `agent` on `backend`, and how many
    to start for it, so a caller can start them before the agent's sandbox is even taken;
    None where grading starts its verifiers itself (live state and snapshots: made for this
    agent's sandbox).

    How many: the most any variant of the task grades with (one per group of rule sets
    that grade alike), not this plan's own count, which the verifiers' starts would show
    the agent while it works. Every sandbox reads the host's counters (`/proc/meminfo`'s
    Shmem grew by 244 kB a verifier, the threads of `/proc/loadavg` by one): an audit told
    original and withheld (one verifier) from contradicted, sampled and swapped (two) and
    impossible (three), swapped and impossible included, whose files are the original's or
    say nothing. The grading takes what its rule sets need; the rest stay warm for the next
    episode."""
    task = plan.task
    if task.spec.grading.mode == "live" or task.spec.grading.filesystem == "snapshot":
        return None
    rulesets = plan.rulesets if shadow else plan.rulesets[:1]
    standby = check_verifier(backend).standby
    prepared = standby and agent.runtime is None
    config = verifier_config(
        agent, standby=verifier_standby(task, prepared=prepared, zygote=True) if standby else None
    )
    return config, max(len(_alike(rulesets)), _most_rule_sets(task, shadow))


def _most_rule_sets(task: Task, shadow: bool) -> int:
    """The most rule sets an episode of `task` is graded under, whatever its variant: its
    own, the original's as a shadow (every variant but original), and the one its files
    state (impossible)."""
    if not shadow:
        return 1
    variants = set(task.spec.variants)
    if IMPOSSIBLE in variants:
        return 3
    return 2 if variants - {"original"} else 1


def verifier_standby(task: Task, *, prepared: bool = True, zygote: bool = False) -> StandbySpec:
    """The standby runner of `task`'s verifiers: with `prepared`, prepared for its graders
    (never on a snapshot, whose jobs run on the agent's files) and forked from a zygote with
    `zygote`; else one that only waits."""
    python = task.spec.grading.python
    if not prepared:
        return standby_spec(python)
    return standby_spec(python, preparation_for(task), zygote=zygote)


_EXECUTOR = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="termgym-grade")
"""Verifiers of one grading run side by side (each thread waits on its verifier)."""


def _alike(rulesets: Sequence[RuleSet]) -> list[list[RuleSet]]:
    """Rule sets grouped by what grading them runs: the same values and the same graders."""
    groups: dict[str, list[RuleSet]] = {}
    for ruleset in rulesets:
        key = json.dumps(
            [dict(ruleset.rules), [g.model_dump() for g in ruleset.graders]],
            sort_keys=True, default=str,
        )  # fmt: skip
        groups.setdefault(key, []).append(ruleset)
    return list(groups.values())


def _renamed(ruleset: RuleSet) -> RuleSet:
    return dataclasses.replace(ruleset, name=GRADED)


def _rewound(work: BinaryIO | None) -> BinaryIO | None:
    if work is not None:
        work.seek(0)
    return work


def _give_back(source: SandboxSource, taken: list[Sandbox]) -> None:
    for verifier in taken:
        source.release(verifier)


def _grade_one(
    source: SandboxSource,
    config: SandboxConfig,
    task: Task,
    group: list[RuleSet],
    plan: GradingPlan,
    folder: GradingFolder,
    bundle: BinaryIO,
    held: Preparation | None,
    *,
    taken: list[Sandbox],
) -> RulesetGrading:
    """One verifier: take it (onto `taken`, for the caller to give back), import the
    bundle, run the runner, read its report. A bundle without the folder's files `held`
    (which a prepared standby unpacked) goes to a verifier whose standby does not wait
    after the folder's files alone."""
    start = time.perf_counter()
    key = new_key()
    try:
        verifier = source.acquire(config)
    except InfrastructureError:
        raise
    except Exception as exc:  # noqa: BLE001 - a clean sandbox that will not start is ours
        raise SandboxStartError(f"could not start a verifier: {exc}") from exc
    taken.append(verifier)
    acquired = time.perf_counter()
    grades = as_verifier(verifier)
    standby = _standby_of(grades)
    with _the_agents_failure("copied in", "copied in"):
        if held is not None and standby is None:  # a cold runner: nothing unpacked yet
            with _spool() as alone:
                write_folder(alone, folder, held.files)
                alone.seek(0)
                grades.import_archive(alone, copy_limits(task).budget())
        grades.import_archive(bundle, copy_limits(task).budget())
    injected = time.perf_counter()
    result = _run(verifier, task, folder, key, plan.budget, standby)
    ran = time.perf_counter()
    report = _read(result, key, plan)
    gaps = isolation_gaps(report)
    graded = _verdicts(report, [_renamed(group[0])], plan)[GRADED]
    timings = {
        "verifier": acquired - start,
        "inject": injected - acquired,
        "run": ran - injected,
        "read": time.perf_counter() - ran,
    }
    facts = dataclasses.replace(report, jobs={})
    return RulesetGrading({r.name: _as_ruleset(graded, r) for r in group}, timings, gaps, (facts,))


def _as_ruleset(verdict: Verdict, ruleset: RuleSet) -> Verdict:
    """The verdict graded as GRADED, under its rule set's own name."""
    results = tuple(
        dataclasses.replace(
            r,
            ruleset=ruleset.name,
            starts=tuple(dataclasses.replace(s, ruleset=ruleset.name) for s in r.starts),
        )  # fmt: skip
        for r in verdict.results
    )
    return Verdict(ruleset.name, dict(ruleset.rules), results)


def _inject(
    sandbox: VerifierSandbox,
    task: Task,
    folder: GradingFolder,
    work: BinaryIO | None,
    plan: GradingPlan,
) -> None:
    """Copy the work (if any) and the grading folder into `sandbox`, in one archive."""
    with _spool() as bundle:
        write_bundle(
            bundle, folder, work=work, task_graders=task.root / "graders", files=plan.files,
            manifest=plan.manifest,
        )  # fmt: skip
        bundle.seek(0)
        sandbox.import_archive(bundle)


def _standby_of(sandbox: VerifierSandbox) -> StandbyProgram | None:
    """The sandbox's waiting standby, taken (None: its backend keeps none, or none waits)."""
    return sandbox.take_standby() if sandbox.capabilities.standby else None


def _run(
    sandbox: Sandbox,
    task: Task,
    folder: GradingFolder,
    key: str,
    budget: float,
    standby: StandbyProgram | None = None,
) -> RunResult:
    """The runner's run: handed to `standby` (the verifier's, taken) if one waits, else a
    cold exec."""
    try:
        if standby is not None:
            return standby.finish(go(folder, key), timeout=budget)
        env = {**dict(ENV), "TERMGYM_REPORT_KEY": key}
        return sandbox.exec(
            folder.argv(task.spec.grading.python), timeout=budget, workdir=folder.path, env=env
        )
    except InfrastructureError:
        raise
    except SandboxError as exc:
        raise GraderError(f"the grading run could not finish: {exc}") from exc


def _read(result: RunResult, key: str, plan: GradingPlan, *, alone: bool = True) -> RunnerReport:
    """The run's authentic report, or the GraderError that says why there is none."""
    report = read_report(result.output, key, alone=alone)
    if report is None:
        if result.timed_out:
            raise GraderError(f"the grading run overran its {plan.budget:.0f} s")
        ended = f"exit {result.exit_code}"
        if result.exit_code in (-signal.SIGKILL, 128 + signal.SIGKILL):
            ended += ": killed by signal 9, out of memory or stopped"
        if result.memory_kills:
            ended += f"; the verifier's memory limit killed {result.memory_kills} of its processes"
        raise GraderError(
            f"the grading run printed no authentic report ({ended}): {tail(result.output, 800)}"
        )
    return report


def _verdicts(
    report: RunnerReport, rulesets: Sequence[RuleSet], plan: GradingPlan
) -> dict[str, Verdict]:
    runs = report.jobs
    verdicts = {}
    for ruleset in rulesets:
        results = []
        for spec in ruleset.graders:
            target = plan.canonical[spec.name][ruleset.name]
            results.append(
                _judge(plan.kinds[spec.name], spec, runs.get(spec.name, []), target, ruleset.name)
            )
        verdicts[ruleset.name] = Verdict(ruleset.name, dict(ruleset.rules), tuple(results))
    return verdicts


def isolation_gaps(report: RunnerReport) -> tuple[str, ...]:
    """Which of the verifier's defences did not hold in a grading (docs/security.md); the
    record of the agent's code a job's tests loaded is taken out of its run's files."""
    gaps = []
    if report.dumpable:
        gaps.append("the runner stayed dumpable (no ctypes in the image)")
    if report.nest:
        gaps.append(f"the agent's programs ran without nests: {report.nest}")
    for job, runs in report.jobs.items():
        for run in runs:
            loaded = [p for p in run["files"].pop(AGENT_CODE, "").splitlines() if p]
            if loaded:
                gaps.append(f"grader {job!r}: its tests loaded code of the agent's: {_few(loaded)}")
            gaps += [f"grader {job!r}: {gap}" for gap in _watched(run["files"].pop(WATCHED, None))]
    return tuple(dict.fromkeys(gaps))


_WATCH_GAPS = {
    "ran": "the kernel saw its tests run the snapshot's programs as root, outside a nest",
    "mapped": "the kernel saw its tests map native code of the agent's",
    "loaded": "the kernel saw its tests open code of the agent's",
    "changed": "code files its tests opened were swapped while they ran",
    "unwatched": "the kernel could not watch its tests",
}
"""What each kind of finding of the kernel's watch (termgym/verifier/watch.py) says."""


def _watched(text: str | None) -> list[str]:
    """The isolation gaps of a snapshot run's kernel watch (none where it found nothing)."""
    found: dict[str, list[str]] = {}
    for line in (text or "").splitlines():
        kind, _, path = line.partition("\t")
        kind = kind if kind in _WATCH_GAPS else "unwatched"
        found.setdefault(kind, []).append(path or line)
    return [f"{_WATCH_GAPS[kind]}: {_few(paths)}" for kind, paths in found.items()]


def _few(items: list[str]) -> str:
    return ", ".join(items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")


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
    files = dict(run.get("files", {}))
    starts, problems = parse_starts(files.pop(RECORD, None), spec.name, tuple(run["rulesets"]))
    starts = tuple(s for s in starts if s.ruleset == target)
    output = JobOutput(
        rulesets=tuple(run["rulesets"]),
        exit_code=run.get("exit_code"),
        timed_out=bool(run.get("timed_out")),
        duration=float(run["duration"]),
        output=run.get("output", ""),
        files=files,
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
        starts=starts,
        input_problems=problems,
    )
