"""Recording and replay costs: writer per step, screen per step, reading and opening 10k steps."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from termgym.bench import Row, Section, timings_row
from termgym.recording import (
    CastReplay,
    EpisodeHeader,
    EpisodeWriter,
    StepRecord,
    read_episode,
    synthetic_steps,
    write_synthetic_episode,
)
from termgym.screen import TerminalScreen


def _writer_rows(tmp: Path, steps: int) -> tuple[list[Row], float]:
    records = list(synthetic_steps(steps, output_bytes=1000, seed=1))
    screen = TerminalScreen()
    plain = _plain_pyte_screen()
    screens = []
    feed_text: list[float] = []
    feed_plain: list[float] = []
    for record in records:  # the env's share: emulate the screen, read it back
        began = time.perf_counter()
        screen.feed(record.raw)
        text = screen.text()
        feed_text.append(time.perf_counter() - began)
        screens.append(text)
        began = time.perf_counter()  # side by side: the same step on pyte's own code paths
        plain.feed(record.raw)
        plain.text()
        feed_plain.append(time.perf_counter() - began)
    records = [
        StepRecord(**{**r.__dict__, "screen": s}) for r, s in zip(records, screens, strict=True)
    ]
    header = EpisodeHeader(
        "bench", "fuel-planner", 1, "original", {}, {}, 0, "bench", "docker", {}, time.time()
    )
    writes: list[float] = []
    with EpisodeWriter(tmp / "writer-run", header) as writer:
        for record in records:
            began = time.perf_counter()
            writer.step(record)
            writes.append(time.perf_counter() - began)
    rows = [
        timings_row("EpisodeWriter.step (1 KB output + screen, flushed)", writes),
        timings_row("TerminalScreen.feed + text() per step (env side)", feed_text),
        timings_row("the same on pyte's own draw, scroll and parser (reference)", feed_plain),
    ]
    return rows, sorted(writes)[len(writes) // 2]


def _plain_pyte_screen() -> TerminalScreen:
    """A TerminalScreen running pyte's own draw, index and stream feed (no fast paths)."""
    import pyte

    screen = TerminalScreen()
    inner, stream = screen._screen, screen._stream
    inner.draw = lambda data: pyte.Screen.draw(inner, data)  # type: ignore[method-assign]
    inner.index = lambda: pyte.Screen.index(inner)  # type: ignore[method-assign]
    stream.feed = lambda data: pyte.Stream.feed(stream, data)  # type: ignore[method-assign]
    return screen


def _first_frame(
    command: str, marker: str, timeout: float = 30.0, size: tuple[int, int] = (160, 50)
) -> float | None:
    """Seconds from starting `command` in a tmux terminal of `size` (columns, rows) until
    `marker` shows."""
    if shutil.which("tmux") is None:
        return None
    session = f"termgym-bench-{os.getpid()}-{time.monotonic_ns()}"
    command = f"env -u COLUMNS -u LINES {command}"
    cols, rows = (str(n) for n in size)
    tmux = ["tmux", "new-session", "-d", "-s", session, "-x", cols, "-y", rows, command]
    for _ in range(5):  # a tmux server that is just exiting refuses new sessions for a moment
        began = time.perf_counter()
        if subprocess.run(tmux, capture_output=True).returncode == 0:
            break
        time.sleep(0.2)
    else:
        return None
    try:
        while time.perf_counter() - began < timeout:
            shown = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True
            ).stdout
            if marker in shown:
                return time.perf_counter() - began
            time.sleep(0.01)
        return None
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


RUN_EPISODES = 200
"""Episodes of the run the run view's first frame is measured on (a demo's run is 60)."""


def _run_view_row(termgym: Path, run_dir: Path, quick: bool) -> Row | None:
    """`termgym tui RUN` at 80x24: seconds from the start to the run view's first frame."""
    for n in range(RUN_EPISODES):
        variant = ("original", "contradicted", "withheld")[n % 3]
        write_synthetic_episode(
            run_dir, f"task-{n // 3:02d}--{variant}--000", steps=20, output_bytes=200,
            variant=variant, episode_class=None if variant == "original" else "stale",
            seed=n, with_screens=False,
        )  # fmt: skip
    marker = f"{RUN_EPISODES} episodes"
    times = [
        t
        for _ in range(3 if quick else 7)
        if (t := _first_frame(f"{termgym} tui {run_dir}", marker, size=(80, 24))) is not None
    ]
    return timings_row(
        f"termgym tui: run view's first frame, {RUN_EPISODES} episodes, 80x24", times
    )


def bench_recording(quick: bool = False) -> Section:
    """Writer and screen cost per step; reading, replaying and opening a 10,000-step episode."""
    steps = 2_000 if quick else 10_000
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        rows, write_p50 = _writer_rows(tmp, min(steps, 5_000))
        fast, plain = rows[1].p50_ms, rows[2].p50_ms
        notes.append(
            f"screen per step: {fast:.2f} ms vs {plain:.2f} ms on plain pyte "
            f"({plain / fast:.1f}x faster), measured interleaved on the same steps"
        )
        notes.append(
            f"writer p50 {write_p50 * 1e6:.0f} µs per step = "
            f"{write_p50 / 0.0005:.0%} of the 0.5 ms env-overhead budget"
        )
        small = write_synthetic_episode(tmp / "run", "small", steps=30)
        big = write_synthetic_episode(
            tmp / "run", "big", steps=10_000, output_bytes=1_000, with_screens=False
        )
        size = (big.stat().st_size + big.with_suffix(".cast").stat().st_size) / 1e6
        reads = []
        for _ in range(3 if quick else 7):
            began = time.perf_counter()
            log = read_episode(big)
            last = log.steps[-1]
            reads.append(time.perf_counter() - began)
        assert last.index == 9_999
        rows.append(timings_row(f"read_episode, 10,000 steps ({size:.0f} MB with the cast)", reads))
        began = time.perf_counter()
        replay = CastReplay(big.with_suffix(".cast"))
        index_s = time.perf_counter() - began
        replay.screen_after(9_998)
        cold = time.perf_counter() - began
        rows.append(
            timings_row("coloured screen after the last step, cold (index + replay)", [cold])
        )
        back = []
        for step in range(9_997, 9_987, -1):
            began = time.perf_counter()
            replay.screen_after(step)
            back.append(time.perf_counter() - began)
        rows.append(timings_row("coloured screen one step back (checkpoints)", back))
        notes.append(f"cast index alone {index_s * 1000:.0f} ms")
        termgym = Path(sys.executable).parent / "termgym"
        if termgym.exists():
            if (run_view := _run_view_row(termgym, tmp / "runs" / "many", quick)) is not None:
                rows.append(run_view)
            small_s = _first_frame(f"{termgym} tui {small}", "(30 of 30)")
            big_s = _first_frame(f"{termgym} tui {big}", "(10000 of 10000)")
            began = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import tui.app"], check=True)
            imports_s = time.perf_counter() - began
            if small_s is not None and big_s is not None:
                rows.append(timings_row("termgym tui: first frame, 30-step episode", [small_s]))
                rows.append(timings_row("termgym tui: first frame, 10,000-step episode", [big_s]))
                notes.append(
                    f"TUI first frame (process start to the last step shown, real terminal): "
                    f"10,000 steps {big_s:.2f} s vs 30 steps {small_s:.2f} s, ratio "
                    f"{big_s / small_s:.2f}; the difference is what the episode's size costs; "
                    f"starting Python and importing the app alone takes {imports_s:.2f} s"
                )
        else:
            notes.append("termgym script not installed: TUI first frame not measured")
    return Section("recording", "Recording and replay", tuple(rows), tuple(notes))
