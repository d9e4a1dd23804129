"""RL loops beside their floor: one-step episodes through vector envs of 4, their CPU counted
by a cgroup of the run (`python -m termgym.bench rl`).

Measured in one run, inside one cgroup (`termgym.bench.cpu`), so what the episodes start and
kill (forked workers, sandboxes, the verifiers' zygotes, Ray's daemons) is counted:

- the floor, before the episodes and again after them (the ratios are to the mean of the
  two: the machine's speed moves by a tenth or more within a run): a bwrap start (the
  command line termgym runs, run bare), termgym's own exec of it (spawned without a
  pre-exec hook: `termgym.sandbox._spawn`), a python start, pytest's
  start, and a one-assert test run in a process that imported pytest already (a fork of
  it); each by its CPU, with the floor of a one-check episode (bwrap start + python start)
  and of one pytest-graded rule set (bwrap start + python start + pytest start + the test);
- one-step episodes (reset, one command, submit graded in clean verifiers) through an
  AsyncVectorEnv of 4 bwrap envs and a RayVectorEnv of 4 (a local Ray), same-step
  autoreset: text-report with shadow grading (contradicted: two rule sets, two verifiers),
  whose one command does nothing (every test fails at once), and a one-check task
  (examples/tasks/cargo-limit, shadow off) whose command answers it; episodes/s and CPU per
  episode, and the ratios to the floor;
- the nests' launcher against the Python entry (`docs/security.md`, "Runs the agent's
  programs in nests"): two processes at once, each one env's text-report episodes back to
  back, one with TERMGYM_NEST_LAUNCHER=0, CPU per episode per round and the ratio;
- docker resets back to back: one env's one-step episodes, graded and not, reset p50.

Targets (issue 22): text-report at most 100 ms of CPU per episode; the one-check task at most
2x its floor; a docker reset back to back at most 50 ms at p50.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from termgym.bench import Row, Section, timings_row
from termgym.bench.cpu import CpuMeter

ONE_CHECK = str(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cargo-limit")
ANSWER = "sed -n 's/^max_weight: *//p' /app/policy.txt > /app/answer"
"""cargo-limit's one command: the oracle's, which passes every variant."""
TEXT_TARGET_MS = 100.0
ONE_CHECK_RATIO = 2.0
DOCKER_RESET_MS = 50.0
ONE_ASSERT = "def test_one():\n    assert 1 + 1 == 2\n"
IN_PROCESS = """
import os, resource
import pytest
TEST = "/tmp/termgym-bench/test_one.py"


def once():
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os._exit(int(pytest.main(["-q", "-p", "no:cacheprovider", TEST])))
    os.waitpid(pid, 0)


once()
before = resource.getrusage(resource.RUSAGE_CHILDREN)
for _ in range({n}):
    once()
after = resource.getrusage(resource.RUSAGE_CHILDREN)
used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
print("cpu-ms %.3f" % (1000 * used / {n}))
"""
"""A one-assert test run by pytest in a fork of a process that imported it (printed: CPU
milliseconds per run, the fork's own)."""


SIDE_BY_SIDE = """
import json
import termgym
from termgym.bench.cpu import CpuMeter
with CpuMeter() as meter:
    env = termgym.make("text-report", backend="bwrap", variant="contradicted", pool_size=1)
    def episode():
        env.reset()
        env.step("true")
        env.step(termgym.SUBMIT)
    for _ in range(3):
        episode()
    used = meter.seconds()
    for _ in range({n}):
        episode()
    print(json.dumps({{"cpu_ms": 1000 * (meter.seconds() - used) / {n}}}))
    env.close()
"""
"""One env's one-step text-report episodes back to back, shadow on (printed: CPU
milliseconds per episode, counted by the child's own cgroup)."""


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


# -- the floor ---------------------------------------------------------------------------------


def _cpu_per(meter: CpuMeter, action: Callable[[], object], n: int) -> float:
    """CPU milliseconds per call of `action` (the run's cgroup), after one call to warm up."""
    action()
    used = meter.seconds()
    for _ in range(n):
        action()
    return 1000 * (meter.seconds() - used) / n


def _floor(meter: CpuMeter, n: int) -> dict[str, float]:
    from termgym.bench.sandbox import _bare_exec
    from termgym.grading import verifier_config
    from termgym.sandbox import (
        HOST_ENV,
        BwrapSandbox,
        SandboxConfig,
        make_sandbox,
        seccomp_filter_fd,
    )

    def bare(box: BwrapSandbox, *program: str) -> str:
        import subprocess

        fd = seccomp_filter_fd(nesting=True)
        try:
            argv = [*box._bwrap_argv(fd, session=True), "--", *program]  # noqa: SLF001
            done = subprocess.run(
                argv, env=HOST_ENV, stdin=subprocess.DEVNULL, capture_output=True,
                pass_fds=(fd,), check=False,
            )  # fmt: skip
        finally:
            os.close(fd)
        if done.returncode != 0:
            raise RuntimeError(f"{program}: exit {done.returncode}: {done.stderr[-500:]!r}")
        return done.stdout.decode()

    figures: dict[str, float] = {}
    with make_sandbox("bwrap", verifier_config(SandboxConfig(memory_mb=512))) as box:
        assert isinstance(box, BwrapSandbox)
        figures["bwrap"] = _cpu_per(meter, lambda: _bare_exec(box), n)
        figures["exec"] = _cpu_per(meter, lambda: box.exec(["true"]), n)
        python = _cpu_per(meter, lambda: bare(box, "python3", "-I", "-B", "-c", "pass"), n)
        pytest_ = _cpu_per(
            meter, lambda: bare(box, "python3", "-I", "-B", "-c", "import pytest"), n
        )
        figures["python"] = python - figures["bwrap"]
        figures["pytest"] = pytest_ - python
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "test_one.py").write_text(ONE_ASSERT)
            box.copy_in(Path(tmp) / "test_one.py", "/tmp/termgym-bench/test_one.py")
        out = bare(box, "python3", "-I", "-B", "-c", IN_PROCESS.replace("{n}", str(n)))
        figures["test"] = float(out.split("cpu-ms")[-1])
    figures["one_check"] = figures["bwrap"] + figures["python"]
    figures["pytest_set"] = (
        figures["bwrap"] + figures["python"] + figures["pytest"] + figures["test"]
    )
    return figures


# -- one-step episodes through vector envs ----------------------------------------------------


class _Make:
    def __init__(self, task: str, shadow: bool) -> None:
        self.task, self.shadow = task, shadow

    def __call__(self) -> Any:
        import termgym

        return termgym.make(
            self.task, backend="bwrap", variant="contradicted", shadow=self.shadow,
            pool_size=1, max_steps=50,
        )  # fmt: skip


def _one_step_episodes(
    meter: CpuMeter, vector: str, task: str, command: str, shadow: bool, episodes: int
) -> dict[str, float]:
    """(episodes/s, CPU ms per episode) of one-step episodes in a vector env of 4."""
    from gymnasium.vector import AsyncVectorEnv, AutoresetMode

    import termgym

    envs = 4
    if vector == "ray":
        from termgym.cluster import connect
        from termgym.vector import RayVectorEnv

        connect("local", sandboxes=envs)
        vec: Any = RayVectorEnv(
            task, envs, autoreset_mode=AutoresetMode.SAME_STEP, backend="bwrap",
            variant="contradicted", shadow=shadow, pool_size=1, max_steps=50,
        )  # fmt: skip
    else:
        vec = AsyncVectorEnv(
            [_Make(task, shadow)] * envs, shared_memory=False,
            autoreset_mode=AutoresetMode.SAME_STEP,
        )  # fmt: skip
    act = np.array([command] * envs, dtype=object)
    submit = np.array([termgym.SUBMIT] * envs, dtype=object)
    try:
        vec.reset(seed=0)
        for _ in range(3):  # pools, zygotes and Ray's workers warm, as after a first episode
            vec.step(act)
            vec.step(submit)
        time.sleep(1.0)
        rounds = max(1, episodes // envs)
        used, began = meter.seconds(), time.perf_counter()
        for _ in range(rounds):
            vec.step(act)
            vec.step(submit)
        wall = time.perf_counter() - began
        time.sleep(1.0)  # the refills and closes it set off finish, and are counted
        cpu = meter.seconds() - used
    finally:
        vec.close()
        if vector == "ray":
            import ray

            ray.shutdown()
    done = rounds * envs
    return {"rate": done / wall, "cpu_ms": 1000 * cpu / done, "episodes": done}


# -- docker resets back to back ----------------------------------------------------------------


def _docker_resets(episodes: int, graded: bool) -> Row:
    import termgym

    env = termgym.make(ONE_CHECK, backend="docker", variant="contradicted", shadow=False)
    spent = []
    warnings.filterwarnings("ignore", message=".*termgym: an episode of", category=UserWarning)
    try:
        env.reset(seed=0)
        env.step(ANSWER)
        env.step(termgym.SUBMIT)
        time.sleep(2.0)  # the pool fills once, as after a first episode
        for i in range(episodes):
            began = time.perf_counter()
            env.reset(seed=i)
            spent.append(time.perf_counter() - began)
            env.step(ANSWER)
            if graded:
                env.step(termgym.SUBMIT)
    finally:
        env.close()
    what = "graded one-step episodes" if graded else "one-step episodes, not graded"
    return timings_row(f"docker reset back to back ({what})", spent)


# -- the section -------------------------------------------------------------------------------


def _entries_side_by_side(episodes: int, rounds: int) -> list[tuple[float, float]]:
    """(launcher, Python entry) CPU ms per text-report episode, per round: two processes
    run at once, the same episodes, one of them with TERMGYM_NEST_LAUNCHER=0, so the
    machine's noise falls on both alike."""
    import json
    import subprocess
    import sys

    from termgym.grading import NEST_LAUNCHER_OFF as OFF

    script = SIDE_BY_SIDE.format(n=episodes)
    pairs = []
    for _ in range(rounds):
        started = [
            subprocess.Popen(
                [sys.executable, "-c", script],
                env={**os.environ, OFF: value},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for value in ("1", "0")
        ]
        figures = []
        for proc in started:
            out, err = proc.communicate(timeout=1800)
            lines = [line for line in out.splitlines() if line.startswith("{")]
            if proc.returncode != 0 or not lines:
                raise RuntimeError(f"a side-by-side run failed: {err[-500:]}")
            figures.append(float(json.loads(lines[-1])["cpu_ms"]))
        pairs.append((figures[0], figures[1]))
    return pairs


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def bench_rl(quick: bool = False) -> Section:
    """The RL-loop section of `python -m termgym.bench`."""
    from termgym.images import docker_answers
    from termgym.sandbox import bwrap_works

    title = "RL loops: one-step episodes through vector envs, beside the floor"
    if not bwrap_works():
        return Section("rl", title, (), ("not measured: bubblewrap cannot make namespaces here",))
    notes: list[str] = []
    rows: list[Row] = []
    with CpuMeter() as meter:
        if not meter.counts:
            return Section("rl", title, (), ("not measured: no cgroup of the run can be made",))
        load = _load()
        before = _floor(meter, 10 if quick else 30)
        notes.append(
            f"floor before the episodes (CPU, {meter.counts}; load {load}): bwrap start "
            f"{before['bwrap']:.1f} ms (termgym's exec of it {before['exec']:.1f} ms, spawned "
            f"without a pre-exec hook: {before['exec'] / before['bwrap']:.2f}x), python start "
            f"{before['python']:.1f} ms, pytest start {before['pytest']:.1f} ms, a one-assert "
            f"test in a process that imported pytest {before['test']:.1f} ms; one-check "
            f"episode {before['one_check']:.1f} ms, one pytest-graded rule set "
            f"{before['pytest_set']:.1f} ms"
        )
        count = 8 if quick else 40
        runs = [
            ("text-report, shadow on, one command that does nothing", "text-report", "true", True),
            ("cargo-limit (one check), shadow off, one command that answers", ONE_CHECK, ANSWER,
             False),
        ]  # fmt: skip
        figures: dict[tuple[str, str], dict[str, float]] = {}
        ratio_notes: list[int] = []  # the notes that name a ratio to the floor, in order
        for vector in ("async", "ray"):
            for label, task, command, shadow in runs:
                load = _load()
                try:
                    got = _one_step_episodes(meter, vector, task, command, shadow, count)
                except Exception as exc:  # noqa: BLE001 - Ray missing: the rest still stands
                    notes.append(f"{vector}: {label}: not measured ({type(exc).__name__}: {exc})")
                    continue
                figures[(vector, task)] = got
                name = "AsyncVectorEnv" if vector == "async" else "RayVectorEnv (local Ray)"
                ratio_notes.append(len(notes))
                notes.append(
                    f"{name} of 4, {label}: {got['rate']:.2f} episodes/s, CPU "
                    f"{got['cpu_ms']:.0f} ms per episode ({{ratio}}; {got['episodes']:.0f} "
                    f"episodes, load {load} before, {_load()} after)"
                )
        load = _load()
        after = _floor(meter, 10 if quick else 30)
        floor = {name: (before[name] + after[name]) / 2 for name in before}
        notes.append(
            f"floor after the episodes (load {load}): bwrap start {after['bwrap']:.1f} ms, python "
            f"start {after['python']:.1f} ms, pytest start {after['pytest']:.1f} ms, the "
            f"one-assert test {after['test']:.1f} ms; one-check episode "
            f"{after['one_check']:.1f} ms (before: {before['one_check']:.1f}), one pytest-graded "
            f"rule set {after['pytest_set']:.1f} ms (before: {before['pytest_set']:.1f}); every "
            "ratio to the floor is to the mean of the two"
        )
        shadows = {task: shadow for _, task, _, shadow in runs}
        for index, ((_, task), got) in enumerate(figures.items()):
            floor_ms = floor["one_check"]
            if task == "text-report":
                floor_ms = floor["pytest_set"] * (2 if shadows[task] else 1)
            notes[ratio_notes[index]] = notes[ratio_notes[index]].replace(
                "{ratio}", f"{got['cpu_ms'] / floor_ms:.2f}x its floor of {floor_ms:.0f} ms"
            )
        text = figures.get(("async", "text-report"))
        if text is not None:
            notes.append(
                f"target: text-report at most {TEXT_TARGET_MS:.0f} ms of CPU per episode: "
                f"{text['cpu_ms']:.0f} ms, {_verdict(text['cpu_ms'] <= TEXT_TARGET_MS)} "
                f"({text['cpu_ms'] / TEXT_TARGET_MS:.1f}x the target)"
            )
        check = figures.get(("async", ONE_CHECK))
        if check is not None:
            ratio = check["cpu_ms"] / floor["one_check"]
            notes.append(
                f"target: the one-check task at most {ONE_CHECK_RATIO:.0f}x its floor: "
                f"{ratio:.2f}x, {_verdict(ratio <= ONE_CHECK_RATIO)}"
            )
    from termgym.grading import nest_launcher

    if nest_launcher() is not None:
        load = _load()
        pairs = _entries_side_by_side(8 if quick else 20, 2 if quick else 4)
        ratios = ", ".join(f"{a / b:.2f}" for a, b in pairs)
        notes.append(
            f"the nests' launcher against the Python entry, side by side (two processes at "
            f"once, one env each, text-report back to back, {len(pairs)} rounds): "
            + "; ".join(f"{a:.0f} against {b:.0f} ms" for a, b in pairs)
            + f" of CPU an episode, {ratios} (load {load} before, {_load()} after)"
        )
    else:
        notes.append("the nests' launcher not measured: this host cannot build it")
    if docker_answers():
        load = _load()
        graded = _docker_resets(10 if quick else 30, graded=True)
        loose = _docker_resets(10 if quick else 30, graded=False)
        rows += [graded, loose]
        notes.append(
            f"target: a docker reset back to back at most {DOCKER_RESET_MS:.0f} ms at p50: "
            f"{graded.p50_ms:.0f} ms between graded episodes, "
            f"{_verdict(graded.p50_ms <= DOCKER_RESET_MS)}; {loose.p50_ms:.0f} ms between "
            f"episodes never graded, {_verdict(loose.p50_ms <= DOCKER_RESET_MS)} (load {load} "
            f"before, {_load()} after; docker's own CPU is the engine's, not counted)"
        )
    else:
        notes.append("docker resets not measured: no engine answers")
    notes.append(f"machine: {os.cpu_count()} cores; 1-minute load average {_load()} at the end")
    return Section("rl", title, tuple(rows), tuple(notes))
