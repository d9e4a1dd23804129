"""`termgym play`: a person solves a task in the sandbox's terminal, recorded like an agent.

Ctrl-] ends the episode: the person then submits it for grading, or reports that the task
contradicts itself (what an agent does with REPORT_CONFLICT: the right answer to an
impossible episode), or goes back to the shell. `exit` in the shell submits.
"""

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

from termgym._actions import SUBMIT, report_conflict
from termgym._terminal_text import printable
from termgym.analysis.explain import rule_table, show
from termgym.analysis.failures import failures
from termgym.env import TerminalEnv, format_keys
from termgym.errors import RecordingError
from termgym.grading import GradeReport
from termgym.sandbox import RunResult
from termgym.tasks import TamperEvidence, Task

SUBMIT_KEY = b"\x1d"
"""Ctrl-] ends the episode (as in telnet): a menu then asks to submit it for grading, to
report a conflict, or to go back; `exit` in the shell submits."""
MENU = (
    "\r\n\x1b[1m[termgym]\x1b[0m Enter or s: submit for grading  ·  r: report that the task "
    "contradicts itself  ·  any other key: back to the shell\r\n"
)
REASON_PROMPT = "\x1b[1mwhat contradicts what?\x1b[0m (Enter ends it) "


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
            f"\x1b[1m{printable(env.task_id, one_line=True)}\x1b[0m\r\n\r\n"
            + printable(obs["instruction"]).replace("\n", "\r\n")
            + "\r\n\x1b[2mCtrl-] ends the episode: submit it for grading, or report that the "
            "task contradicts itself. `exit` submits.\x1b[0m\r\n\r\n"
        )
        stdout.write(banner.encode())
        stdout.flush()
        assert env.episode is not None
        visible = dict(env.episode.plan.rules_visible)
        stdout.write(env.episode.opening)  # keys mode's shell is a person's: its prompt
        stdout.flush()
        session = _Session(env, stdout)
        fd = stdin.fileno()
        while True:
            after = _loop(session, fd)
            if after is None:  # the shell exited: submit
                action = SUBMIT
                break
            session.flush_step()
            chosen = _menu(_Keys(fd, after), stdout)
            if chosen is not None:
                action = chosen
                break
            stdout.write(b"\x1b[2m(back to the shell)\x1b[0m\r\n")
            stdout.flush()
        session.flush_step()
        _, reward, _, _, info = env.step(action)
    finally:
        env.close()
    lines = outcome_lines(reward, info, visible)
    stdout.write(("\r\n" + "\r\n".join(lines) + "\r\n").encode())
    stdout.flush()
    return PlayResult(reward=reward, info=info)


class _Keys:
    """Keys typed, one at a time: those already read (typed with Ctrl-]), then the terminal's."""

    def __init__(self, fd: int, pending: bytes) -> None:
        self.fd = fd
        self.pending = bytearray(pending)

    def read(self) -> bytes:
        if self.pending:
            key = bytes(self.pending[:1])
            del self.pending[:1]
            return key
        return os.read(self.fd, 1)


def _menu(keys: _Keys, out: BinaryIO) -> str | None:
    """After Ctrl-]: SUBMIT, a REPORT_CONFLICT action with the reason typed, or None (back
    to the shell)."""
    out.write(MENU.encode())
    out.flush()
    with _raw(keys.fd):
        key = keys.read()
        if key in (b"\r", b"\n", b"s", b"S"):
            return SUBMIT
        if key not in (b"r", b"R"):
            return None
        out.write(REASON_PROMPT.encode())
        out.flush()
        typed = bytearray()
        while (byte := keys.read()) not in (b"\r", b"\n", b""):
            if byte in (b"\x7f", b"\x08"):  # backspace
                if typed:
                    typed = typed[:-1]
                    out.write(b"\x08 \x08")
            elif byte == b"\x03":  # Ctrl-C: back to the shell
                out.write(b"\r\n")
                out.flush()
                return None
            elif byte >= b" ":
                typed += byte
                out.write(byte)
            out.flush()
        out.write(b"\r\n")
        out.flush()
    return report_conflict(typed.decode("utf-8", "replace"))


def outcome_lines(
    reward: float, info: dict[str, Any], visible: dict[str, Any] | None = None
) -> list[str]:
    """What `play` prints once graded: the reward and class, the rule values (as the person
    saw them, in force, and in each shadow rule set), each rule set's verdict with its
    failing graders and their messages (the tests' names), the conflict reported, the tamper
    evidence, where the recording is and the command that replays it."""
    variant = str(info.get("variant") or "")
    shown_class = printable(str(info.get("class") or "-"), one_line=True)
    lines = [
        f"\x1b[1mgraded\x1b[0m: reward {reward:.2f}, class {shown_class} "
        f"({printable(variant, one_line=True)})"
    ]
    if info.get("error"):
        lines.append(f"  error: {printable(str(info['error']))}")
    try:
        report = GradeReport.from_wire(
            info.get("verdicts") or {}, variant=variant, episode_class=None
        )
    except RecordingError as exc:
        report = None
        lines.append(f"  verdicts unreadable: {printable(str(exc))}")
    enforced = info.get("rules_enforced") or {}
    if enforced or visible:
        lines += _rule_lines(visible if visible is not None else dict(enforced), enforced, report)
    failed = failures(report) if report is not None else []
    for name, verdict in (report.verdicts if report else {}).items():
        mark = {True: "pass", False: "FAIL", None: "?"}[verdict.passed]
        lines.append(f"  {printable(name, one_line=True):<12} {mark}")
        for f in (f for f in failed if f.ruleset == name):  # a line per failing test
            where = f"{f.grader}: {f.test}" if f.test else f.grader
            lines.append(f"    {printable(where)}: {printable(_clip(f.message, MESSAGE_CHARS))}")
    if info.get("conflict") is not None:
        lines.append(f"  reported a conflict: {printable(str(info['conflict']) or '(no reason)')}")
    tamper = TamperEvidence.from_dict(info.get("tamper"))
    if tamper is not None and tamper.tampered:
        lines.append(f"  tamper evidence: {printable(tamper.summary())}")
    recording = info.get("episode_file")
    lines.append(f"  recording {printable(str(recording))}")
    if recording:
        lines.append(f"  replay it: termgym tui {printable(str(recording))}")
    return lines


MESSAGE_CHARS = 160
"""Characters of a failing test's message the end screen shows (the recording keeps all)."""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rule_lines(
    visible: dict[str, Any], enforced: dict[str, Any], report: GradeReport | None
) -> list[str]:
    """The rule values: what the person saw, what was in force, each shadow rule set's."""
    rules = rule_table(visible, enforced, report)
    shadows = list(dict.fromkeys(name for line in rules for name in line.shadows))
    heads = ["rule", "you saw", "in force", *shadows]
    rows = [
        [
            line.name,
            "(withheld)" if line.withheld else show(line.seen),
            show(line.enforced),
            *(show(line.shadows.get(s)) if s in line.shadows else "" for s in shadows),
        ]
        for line in rules
    ]
    widths = [max(len(printable(str(r[i]))) for r in [heads, *rows]) for i in range(len(heads))]
    out = []
    for number, row in enumerate([heads, *rows]):
        cells = "  ".join(printable(str(c)).ljust(w) for c, w in zip(row, widths, strict=True))
        out.append(
            ("  \x1b[2m" if number == 0 else "  ")
            + cells.rstrip()
            + ("\x1b[0m" if number == 0 else "")
        )
    return out


def _loop(session: _Session, fd: int) -> bytes | None:
    """Keystrokes to the sandbox until Ctrl-] (returns what was typed after it) or the end of
    the shell or of the input (None)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if os.isatty(fd) else None
    try:
        with _raw(fd):
            while True:
                ready, _, _ = select.select([fd], [], [], 0.05)
                if not ready:
                    if not session.send(b"", settle=0.0):
                        return None
                    continue
                data = os.read(fd, 4096)
                if not data:
                    return None
                if SUBMIT_KEY in data:
                    before, after = data.split(SUBMIT_KEY, 1)
                    if before:
                        session.send(before)
                    return after
                if not session.send(data):
                    return None
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
