"""Sandbox round trips: persistent shell vs one `docker exec` per command vs tmux; start/stop."""

from __future__ import annotations

import gc
import platform
import time
from collections.abc import Callable

from termgym.bench import Row, Section, timings_row
from termgym.sandbox import SandboxConfig, bwrap_works, make_sandbox
from termgym.sandbox._engine import docker_answers


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
    else:
        notes.append("bwrap: skipped, bubblewrap cannot make namespaces here")
    return Section("sandbox", "Sandbox round trips", tuple(rows), tuple(notes))
