"""`termgym play`: a person solves a task in the sandbox's terminal, recorded like an agent."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import termios
import time
import tty
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from termgym._terminal_text import printable
from termgym.env import TerminalEnv, format_keys
from termgym.errors import RecordingError
from termgym.grading import GradeReport
from termgym.sandbox import RunResult
from termgym.tasks import TamperEvidence, Task

SUBMIT_KEY = b"\x1d"
"""Ctrl-] submits the episode for grading (as in telnet); `exit` in the shell does too."""


@dataclass(frozen=True)
class PlayResult:
    """How a person's episode ended."""

    reward: float
    info: dict[str, Any]


@contextlib.contextmanager
def _raw(fd: int) -> Iterator[None]:
    if not os.isatty(fd):
        yield
        return
    saved = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class _Session:
    """Keystrokes from a person to the sandbox; a step per line typed (up to Enter)."""

    def __init__(self, env: TerminalEnv, out: BinaryIO) -> None:
        self.env = env
        self.out = out
        self.typed = bytearray()
        self.shown = bytearray()
        self.raw = bytearray()
        self.line_done = False
        self.began = time.monotonic()

    def send(self, data: bytes, settle: float = 0.03) -> bool:
        """Type `data` (may be empty: just collect output); False once the shell has exited."""
        episode = self.env.episode
        assert episode is not None
        if data and self.line_done:  # what a line printed belongs to it, until the next keys
            self.flush_step()
        result = episode.sandbox.send_keys(data, settle=settle, timeout=max(settle, 0.25))
        self.typed += data
        self.line_done = self.line_done or b"\r" in data or b"\n" in data
        if result.raw:
            self.out.write(result.raw)
            self.out.flush()
            self.shown += result.output.encode()
            self.raw += result.raw
        if result.restarted:
            self.flush_step()
            return False
        return True

    def flush_step(self) -> None:
        if not self.typed and not self.raw:
            return
        episode = self.env.episode
        assert episode is not None
        result = RunResult(
            output=self.shown.decode("utf-8", "replace"),
            exit_code=None,
            duration=time.monotonic() - self.began,
            raw=bytes(self.raw),
        )
        episode.record("keys", format_keys(bytes(self.typed)), result, bytes(self.raw))
        self.typed.clear()
        self.shown.clear()
        self.raw.clear()
        self.line_done = False
        self.began = time.monotonic()


def play(
    task: str | Task,
    *,
    variant: str = "original",
    seed: int | None = None,
    backend: str | None = None,
    record_dir: Path | None = None,
    runtime: str | None = None,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
) -> PlayResult:
    """Put the person at the keyboard in the task's sandbox until Ctrl-] or `exit`, then grade.

    The instruction is printed first. Every line typed becomes one keys-mode step of the
    recording (agent "human"), so replay, reports and the TUI treat it like any agent's.
    """
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    env = TerminalEnv(
        task,
        variant=variant,
        backend=backend,
        mode="keys",
        record_dir=record_dir,
        agent="human",
        pool_size=0,
        max_steps=100_000,
        runtime=runtime,
    )
    try:
        obs, _ = env.reset(seed=seed)
        banner = (
            f"\x1b[1m{env.task_id}\x1b[0m\r\n\r\n"
            + printable(obs["instruction"]).replace("\n", "\r\n")
            + "\r\n\x1b[2mCtrl-] submits for grading; so does `exit`.\x1b[0m\r\n\r\n"
        )
        stdout.write(banner.encode())
        stdout.flush()
        assert env.episode is not None
        stdout.write(env.episode.opening)  # keys mode's shell is a person's: its prompt
        stdout.flush()
        session = _Session(env, stdout)
        _loop(session, stdin.fileno())
        session.flush_step()
        _, reward, _, _, info = env.step("<submit>")
    finally:
        env.close()
    stdout.write(("\r\n" + "\r\n".join(outcome_lines(reward, info)) + "\r\n").encode())
    stdout.flush()
    return PlayResult(reward=reward, info=info)


def outcome_lines(reward: float, info: dict[str, Any]) -> list[str]:
    """What `play` prints once graded: the reward and class, each rule set's verdict with its
    failing graders and their messages (the tests' names), the tamper evidence, where the
    recording is."""
    variant = str(info.get("variant") or "")
    lines = [
        f"\x1b[1mgraded\x1b[0m: reward {reward:.2f}, class {info.get('class') or '-'} ({variant})"
    ]
    if info.get("error"):
        lines.append(f"  error: {printable(str(info['error']))}")
    try:
        report = GradeReport.from_wire(
            info.get("verdicts") or {}, variant=variant, episode_class=None
        )
    except RecordingError as exc:
        report = None
        lines.append(f"  verdicts unreadable: {exc}")
    for name, verdict in (report.verdicts if report else {}).items():
        mark = {True: "pass", False: "FAIL", None: "?"}[verdict.passed]
        lines.append(f"  {name:<12} {mark}")
        for result in verdict.results:
            if result.passed:
                continue
            why = result.error or result.message
            lines.append(f"    {printable(result.grader)}: {printable(why[:600])}")
    tamper = TamperEvidence.from_dict(info.get("tamper"))
    if tamper is not None and tamper.tampered:
        lines.append(f"  tamper evidence: {printable(tamper.summary())}")
    lines.append(f"  recording {printable(str(info.get('episode_file')))}")
    return lines


def _loop(session: _Session, fd: int) -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if os.isatty(fd) else None
    try:
        with _raw(fd):
            while True:
                ready, _, _ = select.select([fd], [], [], 0.05)
                if not ready:
                    if not session.send(b"", settle=0.0):
                        return
                    continue
                data = os.read(fd, 4096)
                if not data:
                    return
                if SUBMIT_KEY in data:
                    before = data.split(SUBMIT_KEY, 1)[0]
                    if before:
                        session.send(before)
                    return
                if not session.send(data):
                    return
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
