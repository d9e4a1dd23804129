"""Sandbox round trips: persistent shell vs one `docker exec` per command vs tmux; start/stop."""

from __future__ import annotations

import gc
import os
import platform
import resource
import subprocess
import time
from collections.abc import Callable

from termgym.bench import Row, Section, timings_row
from termgym.images import docker_answers
from termgym.sandbox import (
    HOST_ENV,
    BwrapSandbox,
    SandboxConfig,
    bwrap_works,
    make_sandbox,
    seccomp_filter_fd,
)


def _time(action: Callable[[], object], n: int) -> list[float]:
    spent = []
    for _ in range(n):
        began = time.perf_counter()
        action()
        spent.append(time.perf_counter() - began)
    return spent


def _persistent(backend: str, n: int) -> Row:
    with make_sandbox(backend, SandboxConfig()) as box:
        for _ in range(50):  # warm up
            box.run("true")
        gc.disable()
        try:
            spent = _time(lambda: _ok(box.run("true").exit_code), n)
        finally:
            gc.enable()
    return timings_row(f"(a) persistent shell, `true` ({backend})", spent)


def _ok(code: int | None) -> None:
    if code != 0:
        raise RuntimeError(f"benchmark command failed with exit code {code}")


def _docker_exec_and_tmux(n: int) -> tuple[Row, Row]:
    """(b) one `docker exec` per command; (c) tmux send-keys + wait-for, each via docker exec."""
    with make_sandbox("docker", SandboxConfig()) as box:
        container = box.container  # type: ignore[attr-defined]

        def one_exec() -> None:
            _ok(container.exec_run(["sh", "-c", "true"], user="0:0").exit_code)

        exec_times = _time(one_exec, n)
        _ok(container.exec_run(["tmux", "new-session", "-d", "-s", "tg"], user="0:0").exit_code)
        keys = ["tmux", "send-keys", "-t", "tg", "true; tmux wait-for -S tg-done", "Enter"]

        def one_tmux() -> None:
            _ok(container.exec_run(keys, user="0:0").exit_code)
            _ok(container.exec_run(["tmux", "wait-for", "tg-done"], user="0:0").exit_code)

        tmux_times = _time(one_tmux, n)
    return (
        timings_row("(b) one `docker exec` per command (InterCode)", exec_times),
        timings_row("(c) tmux send-keys + wait-for via docker exec (Terminal-Bench)", tmux_times),
    )


def _start_stop(backend: str, n: int) -> tuple[Row, Row, Row]:
    starts, freezes, stops = [], [], []
    for _ in range(n):
        box = make_sandbox(backend, SandboxConfig())
        began = time.perf_counter()
        box.start()
        starts.append(time.perf_counter() - began)
        _ok(box.run("sleep 1000 & sleep 1001 &").exit_code)
        began = time.perf_counter()
        box.freeze()
        freezes.append(time.perf_counter() - began)
        began = time.perf_counter()
        box.close()
        stops.append(time.perf_counter() - began)
    what = "container + shell" if backend == "docker" else "bwrap + shell"
    return (
        timings_row(f"{backend} sandbox start ({what})", starts),
        timings_row(f"{backend} freeze (kill every agent process)", freezes),
        timings_row(f"{backend} sandbox stop (close)", stops),
    )


def _cpu_seconds() -> float:
    """CPU this process and its reaped children used so far (user and system)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _bare_exec(box: BwrapSandbox) -> None:
    """The bwrap command line `box.exec(["true"])` runs, run by subprocess.run alone."""
    fd = seccomp_filter_fd()
    try:
        argv = [*box._bwrap_argv(fd, session=True), "--", "true"]  # noqa: SLF001
        done = subprocess.run(
            argv, env=HOST_ENV, stdin=subprocess.DEVNULL, capture_output=True,
            pass_fds=(fd,), check=False,
        )  # fmt: skip
    finally:
        os.close(fd)
    _ok(done.returncode)


def _exec_side_by_side(n: int) -> tuple[Row, Row, str]:
    """A bwrap exec of `true` through termgym, and the same bwrap command run bare (no user
    namespace entered, no cgroups joined, no output collected), alternated."""
    walls: dict[str, list[float]] = {"termgym": [], "bare": []}
    cpu = dict.fromkeys(walls, 0.0)
    with make_sandbox("bwrap", SandboxConfig()) as box:
        assert isinstance(box, BwrapSandbox)
        runs = {
            "termgym": lambda: _ok(box.exec(["true"]).exit_code),
            "bare": lambda: _bare_exec(box),
        }
        for run in runs.values():  # warm up
            run()
        for _ in range(n):
            for name, run in runs.items():
                began, used = time.perf_counter(), _cpu_seconds()
                run()
                walls[name].append(time.perf_counter() - began)
                cpu[name] += _cpu_seconds() - used
    ours = timings_row("bwrap exec `true` through termgym (Sandbox.exec)", walls["termgym"])
    bare = timings_row("bwrap exec `true`, the same bwrap command run bare", walls["bare"])
    note = (
        f"bwrap exec, termgym / bare: {ours.p50_ms / bare.p50_ms:.2f}x at p50 "
        f"({ours.p50_ms:.1f} vs {bare.p50_ms:.1f} ms); CPU per exec, this process and its "
        f"children: {cpu['termgym'] / n * 1000:.1f} vs {cpu['bare'] / n * 1000:.1f} ms "
        f"(load {os.getloadavg()[0]:.1f})"
    )
    return ours, bare, note


def bench_sandbox(*, quick: bool = False) -> Section:
    """Measure the round trips and lifecycles side by side in this run."""
    n_fast, n_slow, n_life = (200, 10, 3) if quick else (2000, 40, 8)
    rows: list[Row] = []
    notes: list[str] = [f"machine: {platform.machine()}, {platform.system()} "
                        f"{platform.release()}, Python {platform.python_version()}"]  # fmt: skip
    docker = docker_answers()
    if docker:
        rows.append(a := _persistent("docker", n_fast))
        b, c = _docker_exec_and_tmux(n_slow)
        rows += [b, c]
        ratio_b, ratio_c = b.p50_ms / a.p50_ms, c.p50_ms / a.p50_ms
        notes.append(
            f"(b) / (a) at p50: {ratio_b:.0f}x; (c) / (a) at p50: {ratio_c:.0f}x "
            "(target: at least 100x)"
        )
        notes.append(f"(a) p50 {a.p50_ms:.3f} ms (target: at most 1 ms)")
        start, freeze, stop = _start_stop("docker", n_life)
        rows += [start, freeze, stop]
        notes.append(f"container stop p50 {stop.p50_ms / 1000:.2f} s (target: at most 0.3 s)")
    else:
        notes.append("docker: skipped, no engine answers")
    if bwrap_works():
        rows.append(_persistent("bwrap", n_fast))
        rows += list(_start_stop("bwrap", n_life))
        ours, bare, note = _exec_side_by_side(n_slow * 2)
        rows += [ours, bare]
        notes.append(note)
    else:
        notes.append("bwrap: skipped, bubblewrap cannot make namespaces here")
    return Section("sandbox", "Sandbox round trips", tuple(rows), tuple(notes))
