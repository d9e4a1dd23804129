"""Keys mode's terminal shell beside command mode's bare one: the protocol's round trip through
readline, a keystroke's echo, and the start of each, measured side by side in one run."""

from __future__ import annotations

import gc
import time

from termgym.bench import Row, Section, timings_row
from termgym.images import docker_answers
from termgym.sandbox import Sandbox, SandboxConfig, bwrap_works, make_sandbox


def _runs(box: Sandbox, n: int) -> list[float]:
    for _ in range(50):  # warm up
        box.run("true")
    spent = []
    gc.disable()
    try:
        for _ in range(n):
            began = time.perf_counter()
            if box.run("true").exit_code != 0:
                raise RuntimeError("benchmark command failed")
            spent.append(time.perf_counter() - began)
    finally:
        gc.enable()
    return spent


def _prompt_back(box: Sandbox, n: int) -> list[float]:
    """Enter at the prompt until the next prompt has been drawn (readline's echo included)."""
    shell = box.shell  # type: ignore[attr-defined]
    box.send_keys(b"", settle=0.2)
    spent = []
    for _ in range(n):
        began = time.perf_counter()
        shell._write(b"true\r", began + 5)  # noqa: SLF001 - the raw terminal, no settle wait
        seen = b""
        while not seen.endswith(b"# "):
            got = shell._read_some(5.0)  # noqa: SLF001
            if not got:
                raise RuntimeError(f"the prompt did not come back: {seen!r}")
            seen += got
        spent.append(time.perf_counter() - began)
    return spent


def _backend(backend: str, n: int, n_life: int) -> tuple[list[Row], list[str]]:
    rows, notes = [], []
    starts: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(n_life):
        for interactive in (False, True):
            box = make_sandbox(backend, SandboxConfig(interactive=interactive))
            began = time.perf_counter()
            box.start()
            starts[interactive].append(time.perf_counter() - began)
            box.close()
    with make_sandbox(backend, SandboxConfig()) as bare:
        a = timings_row(f"(a) command mode: `true` through the bare shell ({backend})",
                        _runs(bare, n))  # fmt: skip
    with make_sandbox(backend, SandboxConfig(interactive=True)) as term:
        b = timings_row(f"(b) `run(true)` in a keys-mode terminal shell ({backend})",
                        _runs(term, n))  # fmt: skip
        c = timings_row(f"(c) keys mode: `true<Enter>` until the next prompt ({backend})",
                        _prompt_back(term, max(20, n // 10)))  # fmt: skip
    rows += [a, b, c]
    rows.append(timings_row(f"{backend} start, bare shell", starts[False]))
    rows.append(timings_row(f"{backend} start, terminal shell", starts[True]))
    notes.append(f"{backend}: (b) / (a) at p50 {b.p50_ms / a.p50_ms:.2f}x")
    return rows, notes


def bench_terminal(*, quick: bool = False) -> Section:
    """Measure both shells on each backend that is available, side by side."""
    n, n_life = (200, 3) if quick else (1000, 8)
    rows: list[Row] = []
    notes: list[str] = []
    for backend, available in (("docker", docker_answers()), ("bwrap", bwrap_works())):
        if not available:
            notes.append(f"{backend}: skipped, not available here")
            continue
        more_rows, more_notes = _backend(backend, n, n_life)
        rows += more_rows
        notes += more_notes
    return Section("terminal", "Keys mode's terminal shell", tuple(rows), tuple(notes))
