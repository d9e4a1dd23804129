"""The persistent shell: one bash on a pty per episode, each command completed by a sentinel.

How a command travels: it is encoded as a bash ANSI-C string (`$'...'`, printable ASCII
only, split into lines short enough for a canonical-mode terminal) and run with
`builtin eval`, followed on the same line by a `printf` of a random per-episode sentinel, a
sequence number and `$?`. Echo is off, so the shell prints only what the command prints;
the sentinel is printed in two halves so that even an echoed or traced copy of the line
never holds it whole. The previous exit status is restored before each command, so `$?`
behaves as at a real prompt.

A terminal shell (`interactive=True`, keys mode) is the same bash made into a person's: after
the set-up above, one more line turns on echo, readline (emacs keys), history, completion,
a `user@host:dir$ ` prompt and the system's bash completions where the image has them.
`send_keys` types into it as a person would. `run` still works there: it types one line
that first prints a start marker, so what readline echoed and redrew is cut away and only the
command's own output is kept; the line starts with a space and HISTCONTROL=ignoreboth keeps
it out of the history, and `!` is encoded so history expansion leaves it alone. A line the
agent left half typed at the prompt is discarded first (Ctrl-E Ctrl-U); a program in the
foreground (an editor) would get the line as keystrokes, as it would from a person.

The command's stdin is the terminal: a command that waits for input waits until its
timeout (then it is interrupted with Ctrl-C like any overrun), unless keystrokes are typed
into it with `send_keys`.

A timed-out command gets Ctrl-C and a short grace; if the shell does not answer a fresh
sentinel by then, or the shell died (`exit`, `exec`, killed), a new shell is started in the
workdir: the result says `restarted=True` and its output ends with a `[termgym: ...]` note.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from termgym.errors import SandboxError
from termgym.sandbox._base import RunResult
from termgym.sandbox._spawn import Launch, spawn

_CHUNK = 65536
_LINE_BUDGET = 1800  # encoded characters per line; a canonical-mode terminal line holds 4095
_SLACK = 65536  # bytes read past the output limit before the kept tail is trimmed
INTERRUPT_GRACE = 1.0
"""Seconds a timed-out command gets after Ctrl-C before the shell is killed and restarted."""

BASH_ARGV = ("bash", "--noprofile", "--norc", "--noediting", "-i")
"""How every backend starts the agent's shell: interactive, no rc files, no readline."""

_TERMINAL = (
    " stty sane 2>/dev/null; history -c; set -H -o history -o emacs; "
    "HISTSIZE=1000; HISTFILESIZE=1000; "
    "HISTCONTROL=ignoreboth; unset HISTFILE; shopt -s checkwinsize; "
    "PS1='\\u@\\h:\\w\\$ '; PS2='> '; "
    "bind 'set enable-bracketed-paste off' 2>/dev/null; "
    "[ -r /usr/share/bash-completion/bash_completion ] && "
    ". /usr/share/bash-completion/bash_completion; "
)
"""What makes the protocol shell a person's terminal (`interactive=True`): echo, readline,
history, a prompt, completion. The sentinel line follows it on the same line, so readline
takes over only after the shell has answered."""

_SENTINEL = re.compile(rb"\r?\n__TG([0-9a-f]{20}):(\d+):(-?\d+)\r?\n")
"""A sentinel line: its token (a shell's own, secret), the command's number, its status.
Compiled once: a pattern of each shell's own cost a sandbox's start a fifth of a
millisecond to compile (`PersistentShell._own_match`)."""
_START_MARKER = re.compile(rb"__TG([0-9a-f]{20}):(\d+):go\r?\n")
"""A terminal shell's start marker: its token, the command's number."""

_CLEAR_LINE = b"\x05\x15"
"""Ctrl-E Ctrl-U: readline drops what was typed at the prompt before a protocol line."""

_ECHO_OFF = "stty -echo 2>/dev/null; "
_SHELL_HYGIENE = (
    "set +H +o history +o emacs +o vi; unset HISTFILE PROMPT_COMMAND; "
    "PS1=''; PS2=''; PS0=''; PS4='+ '; __tg_rc() { return $1; }\n"
)
_HYGIENE = _ECHO_OFF + _SHELL_HYGIENE
"""Terminal settings the protocol needs; re-sent after an interrupt (the agent may have
started another shell with `exec bash`, which came up with a prompt and line editing). A
shell on a terminal whose echo the host turned off before it started (`Channel.echo_off`)
starts without the `stty` (a program start) that turns it off."""


def _quote_table() -> list[str]:
    table = [chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}" for b in range(256)]
    table[0x5C], table[0x27], table[0x0A] = "\\\\", "\\'", "\\n"
    table[0] = ""  # NUL cannot travel through a C string; it is dropped
    table[0x21] = "\\x21"  # "!" would be history expansion in a terminal shell
    return table


_QUOTE = _quote_table()


def ansi_c_quote(text: str | bytes) -> list[str]:
    """Encode `text` as pieces of a bash `$'...'` string body, printable ASCII only."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    return [_QUOTE[byte] for byte in data]


def _chunks(pieces: Sequence[str], budget: int = _LINE_BUDGET) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        if size + len(piece) > budget and current:
            out.append("".join(current))
            current, size = [], 0
        current.append(piece)
        size += len(piece)
    out.append("".join(current))
    return out


class _Collector:
    """Output of one command: bounded memory, head and tail kept around a truncation marker."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 0)
        self.half = self.limit // 2
        self.keep = max(self.limit - self.half, 4096)
        self.head: bytes | None = None
        self.buf = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        self.buf += chunk

    def trim(self) -> None:
        if len(self.buf) <= self.limit + _SLACK:
            return
        if self.head is None:
            self.head = bytes(self.buf[: self.half])
            del self.buf[: self.half]
        excess = len(self.buf) - self.keep
        if excess > 0:
            self.dropped += excess
            del self.buf[:excess]

    def finish(self) -> tuple[bytes, bool]:
        """Return (kept bytes with marker if cut, whether anything was cut)."""
        body = bytes(self.buf)
        head, dropped = self.head, self.dropped
        if head is None:
            if len(body) <= self.limit:
                return body, False
            head = body[: self.half]
            body = body[self.half :]
        tail_size = self.limit - self.half
        if len(body) > tail_size:
            dropped += len(body) - tail_size
            body = body[len(body) - tail_size :] if tail_size else b""
        marker = f"\r\n[... {dropped} bytes truncated by termgym ...]\r\n".encode()
        return head + marker + body, True


@dataclass
class _Outcome:
    kind: str  # "done" | "timeout" | "died"
    status: int | None = None


class Channel(Protocol):
    """A byte stream to one interactive shell on a terminal (a pty, or a docker exec socket)."""

    fd: int
    description: str
    echo_off: bool
    """The terminal's echo was off before the shell started (the host set it on the pty it
    made): the shell's setup need not turn it off."""

    def alive(self) -> bool:
        """False once the shell is known to be gone."""

    def close(self) -> None:
        """Drop the connection and stop the host side (idempotent)."""

    def exit_status(self) -> int | None:
        """The shell's exit status once it is gone (None if unknown)."""


class PtyChannel:
    """A host command on a pty of its own, its controlling terminal (bwrap, local), started
    by `termgym.sandbox._spawn` (nothing runs between its fork and its exec)."""

    echo_off = True  # set on the pty before the spawn

    def __init__(
        self,
        argv: Sequence[str],
        size: tuple[int, int],
        env: Mapping[str, str] | None = None,
        launch: Launch | None = None,
        pass_fds: Sequence[int] = (),
    ) -> None:
        self.description = " ".join(argv)
        master, slave = os.openpty()  # both close on exec
        try:
            rows, cols = size
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            attrs = termios.tcgetattr(slave)
            attrs[3] &= ~termios.ECHO
            termios.tcsetattr(slave, termios.TCSANOW, attrs)
            self.proc = spawn(
                argv, launch=launch, tty=os.ttyname(slave), env=env,
                stdin=slave, stdout=slave, stderr=slave, pass_fds=pass_fds,
            )  # fmt: skip
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)  # the child's copies are its own: EOF reaches us when it ends
        _nonblocking(master)
        self.fd: int = master
        self.pid: int = self.proc.pid
        self._closed = False

    def alive(self) -> bool:
        return not self._closed and self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        if not self._closed:
            self._closed = True
            with contextlib.suppress(OSError):
                os.close(self.fd)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)

    def exit_status(self) -> int | None:
        self.close()
        code = self.proc.returncode
        if code is None:
            return None
        return 128 - code if code < 0 else code


def _nonblocking(fd: int) -> None:
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


class PersistentShell:
    """One interactive bash on a terminal, connected once, reused for every run.

    Args:
        argv: Host command whose pty is the shell (e.g. `bwrap ... bash ...`), or None when
            `connect` is given.
        connect: Makes the Channel to a fresh shell, given the terminal size (docker).
        workdir: Directory the shell starts in (created if missing).
        env: Variables exported into the shell (re-exported after a restart).
        output_limit: Bytes kept per command; the rest is dropped behind a marker.
        host_env: Environment of the spawned host process (None: inherit).
        on_death: Called when the shell died; may raise SandboxCrashed (sandbox gone).
        kill_hook: Called with the shell's in-sandbox pid to kill its foreground job and the
            shell before the host process is killed (docker: the process lives in the container).
        size: Terminal rows and columns.
        reclaim: Called when a fresh shell would not come up (a fork bomb holding every
            pid): stops the agent's leftover processes so one more start can succeed.
        interactive: Make the shell a person's terminal (prompt, echo, readline, history,
            completion) after the set-up, and again after every restart (keys mode).

    Not thread-safe: one caller at a time.
    """

    def __init__(
        self,
        argv: Sequence[str] | None = None,
        *,
        connect: Callable[[tuple[int, int]], Channel] | None = None,
        workdir: str = "/",
        env: Mapping[str, str] | None = None,
        output_limit: int = 1_000_000,
        host_env: Mapping[str, str] | None = None,
        on_death: Callable[[], None] | None = None,
        kill_hook: Callable[[int], None] | None = None,
        size: tuple[int, int] = (24, 80),
        reclaim: Callable[[], None] | None = None,
        interactive: bool = False,
    ) -> None:
        self.workdir = workdir
        self.interactive = interactive
        self.reclaim = reclaim
        self.env = dict(env or {})
        self.output_limit = output_limit
        self.host_env = dict(host_env) if host_env is not None else None
        self.on_death = on_death
        self.kill_hook = kill_hook
        self.size = size
        if connect is None:
            if not argv:
                raise ValueError("PersistentShell needs argv or connect")
            command, host = list(argv), self.host_env
            connect = lambda size: PtyChannel(command, size, host)  # noqa: E731
        self.connect = connect
        token = secrets.token_hex(10)
        self._left, self._right = "__TG" + token[:6], token[6:]
        self._token = token.encode()
        self._awaiting_start: int | None = None
        self._prompt_due = False
        self._seq = 0
        self._status = 0
        self._child: Channel | None = None
        self._pending = b""
        self.shell_pid: int | None = None
        self.restarts = 0

    # ---- lifecycle -------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._child is not None and self._child.alive()

    def start(self, timeout: float = 30.0) -> None:
        """Spawn the shell and set it up; raises SandboxError if it does not come up."""
        child = self._child = self.connect(self.size)
        self._status = 0
        self._awaiting_start = None
        self._seq += 1
        init = self._init_script(self._seq)
        deadline = time.monotonic() + timeout
        self._write(init.encode(), deadline)
        collector = _Collector(1 << 20)
        outcome = self._read_until(collector, self._seq, deadline)
        if outcome.kind != "done":
            text = collector.finish()[0].decode("utf-8", "replace")[-2000:]
            self._kill()
            raise SandboxError(
                f"Expected the shell ({child.description}) to answer within {timeout:.0f} s; "
                f"it {'exited' if outcome.kind == 'died' else 'did not answer'}. "
                f"It printed: {text!r}"
            )
        self.shell_pid = outcome.status
        self._status = 0

    def _init_script(self, seq: int) -> str:
        exports = "".join(
            f"export {name}=$'{''.join(ansi_c_quote(value))}'\n" for name, value in self.env.items()
        )
        workdir = "".join(ansi_c_quote(self.workdir))
        assert self._child is not None
        return (
            (_SHELL_HYGIENE if self._child.echo_off else _HYGIENE)
            + exports
            + f"[ -d $'{workdir}' ] || mkdir -p $'{workdir}' 2>/dev/null; cd $'{workdir}'\n"
            + (_TERMINAL if self.interactive else "")
            + self._done_line(seq, "$$")
        )

    def _done_line(self, seq: int, status: str = '"$?"') -> str:
        return f"builtin printf '\\n%s%s:%s:%s\\n' {self._left} {self._right} {seq} {status}\n"

    def close(self) -> None:
        """Kill the shell (idempotent)."""
        if self._child is not None:
            self._kill()

    def _kill(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        if self.kill_hook is not None and self.shell_pid is not None:
            with contextlib.suppress(Exception):
                self.kill_hook(self.shell_pid)
        child.close()
        self.shell_pid = None

    def restart(self) -> None:
        """Kill the shell (if any) and start a fresh one in the workdir."""
        self._kill()
        self.restarts += 1
        try:
            try:
                self.start(timeout=10.0 if self.reclaim is not None else 30.0)
            except SandboxError:
                if self.reclaim is None:
                    raise
                self.reclaim()
                self.start()
        except SandboxError:
            # The sandbox may be dying under us (a container killed from outside is still
            # reported running for a moment): let the backend say so if it can.
            for _ in range(20):
                time.sleep(0.1)
                if self.on_death is not None:
                    self.on_death()
            raise

    # ---- commands --------------------------------------------------------------------------

    def run(self, command: str, timeout: float = 30.0) -> RunResult:
        """Run `command` and wait for its sentinel (see the module docstring)."""
        began = time.monotonic()
        restarted = self._ensure_started()
        collector = _Collector(self.output_limit)
        self._drain(collector)
        notes: list[str] = []
        if restarted:
            notes.append(self._reset_note("had exited"))
        self._seq += 1
        seq = self._seq
        deadline = began + timeout
        died_on_write = not self._write(self._command_lines(command, seq), deadline)
        outcome = _Outcome("died") if died_on_write else self._read_until(collector, seq, deadline)
        timed_out = False
        exit_code: int | None = None
        if outcome.kind == "timeout":
            timed_out = True
            notes.append(f"[termgym: timed out after {timeout:g} s; sent Ctrl-C]")
            outcome = self._interrupt(collector)
            if outcome.kind == "done":
                self._status = 130
        if outcome.kind == "done" and not timed_out:
            exit_code = self._status = outcome.status if outcome.status is not None else 0
        self._prompt_due = self.interactive
        if outcome.kind in ("died", "timeout"):
            status = self._death_status() if outcome.kind == "died" else None
            self._handle_death()
            if status is not None and not timed_out:
                exit_code = status
            why = "exited" if outcome.kind == "died" else "did not recover from Ctrl-C"
            notes.append(
                self._reset_note(why + (f" (status {status})" if status is not None else ""))
            )
            self.restart()
            restarted = True
        return self._result(collector, began, exit_code, timed_out, restarted, notes)

    def send_keys(self, keys: str | bytes, settle: float = 0.2, timeout: float = 5.0) -> RunResult:
        """Write raw keystrokes; return once no output came for `settle` seconds (or timeout)."""
        began = time.monotonic()
        restarted = self._ensure_started()
        data = keys.encode("utf-8", "surrogateescape") if isinstance(keys, str) else keys
        collector = _Collector(self.output_limit)
        self._drain(collector)
        deadline = began + timeout
        alive = self._await_prompt(collector, deadline) and self._write(data, deadline)
        quiet_since = time.monotonic()
        notes: list[str] = []
        while alive:
            now = time.monotonic()
            wait = min(deadline - now, quiet_since + settle - now)
            if wait <= 0:
                break
            got = self._read_some(wait)
            if got is None:
                alive = False
            elif got:
                collector.feed(got)
                self._strip_sentinels(collector, keep=None)
                collector.trim()
                quiet_since = time.monotonic()
        exit_code = None
        if not alive:
            exit_code = self._death_status()
            self._handle_death()
            notes.append(self._reset_note(f"exited (status {exit_code})"))
            self.restart()
            restarted = True
        return self._result(collector, began, exit_code, False, restarted, notes)

    # ---- internals -------------------------------------------------------------------------

    def _ours(self, line: bytes) -> bool:
        """A line the driver typed (seen when the agent turned echo on, or traced)."""
        return self._left.encode() in line or line.lstrip(b"+ ").startswith(
            (b"__tg_c=$'", b"__tg_c+=$'")
        )

    def _reset_note(self, why: str) -> str:
        return (
            f"[termgym: the shell {why}; a fresh shell was started in {self.workdir}: "
            "working directory, variables and functions were reset]"
        )

    def _ensure_started(self) -> bool:
        if self._child is None:
            self.start()
            return False
        if not self._child.alive():
            self._handle_death()
            self.restart()
            return True
        return False

    def _command_lines(self, command: str, seq: int) -> bytes:
        parts = _chunks(ansi_c_quote(command))
        prefix = f"__tg_rc {self._status}; "
        lead = ""
        if self.interactive:  # see the module docstring: out of the history, echo cut away
            lead = " "
            prefix = f"builtin printf '%s%s:%s:go\\n' {self._left} {self._right} {seq}; " + prefix
            self._awaiting_start = seq
        if len(parts) == 1:
            line = f"{lead}{prefix}builtin eval $'{parts[0]}'; " + self._done_line(seq)
            return (_CLEAR_LINE if self.interactive else b"") + line.encode()
        lines = [f"{lead}__tg_c=$'{parts[0]}'\n"] + [f"{lead}__tg_c+=$'{p}'\n" for p in parts[1:]]
        lines.append(f'{lead}{prefix}builtin eval "$__tg_c"; ' + self._done_line(seq).rstrip("\n"))
        lines.append("; unset __tg_c\n")
        return (_CLEAR_LINE if self.interactive else b"") + "".join(lines).encode()

    def _interrupt(self, collector: _Collector) -> _Outcome:
        """Ctrl-C the foreground job, then ask for a fresh sentinel; "done" if the shell answers."""
        deadline = time.monotonic() + INTERRUPT_GRACE
        if not self._write(b"\x03", deadline):
            return _Outcome("died")
        time.sleep(0.05)
        self._seq += 1
        self._awaiting_start = None
        lead = " " if self.interactive else ""
        if not self._write((lead + self._done_line(self._seq)).encode(), deadline):
            return _Outcome("died")
        outcome = self._read_until(collector, self._seq, deadline)
        if outcome.kind == "done":
            self._seq += 1
            terminal = _TERMINAL if self.interactive else ""
            setup = lead + _HYGIENE.rstrip("\n") + "; " + terminal
            line = (setup + self._done_line(self._seq)).encode()
            if not self._write(line, deadline):
                return _Outcome("died")
            quiet = _Collector(4096)
            if self._read_until(quiet, self._seq, deadline + INTERRUPT_GRACE).kind != "done":
                return _Outcome("timeout")
        return outcome

    def _write(self, data: bytes, deadline: float) -> bool:
        """Write everything; False if the shell is gone. Gives up silently at the deadline."""
        assert self._child is not None
        fd = self._child.fd
        view = memoryview(data)
        while view:
            try:
                sent = os.write(fd, view)
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return True
                select.select([], [fd], [], min(remaining, 0.05))
                continue
            except OSError:
                return False
            view = view[sent:]
        return True

    def _read_some(self, wait: float) -> bytes | None:
        """Bytes available within `wait` seconds (b"" if none); None once the shell is gone."""
        assert self._child is not None
        fd = self._child.fd
        try:
            ready, _, _ = select.select([fd], [], [], max(wait, 0))
        except InterruptedError:
            return b""
        if not ready:
            return b""
        try:
            data = os.read(fd, _CHUNK)
        except BlockingIOError:
            return b""
        except OSError as exc:
            if exc.errno in (errno.EIO, errno.EBADF, errno.ECONNRESET):
                return None
            raise
        return data or None

    def _drain(self, collector: _Collector) -> None:
        """Collect what arrived between commands (e.g. output of background jobs)."""
        collector.feed(self._pending)
        self._pending = b""
        until = time.monotonic() + 0.05  # a background job may write forever
        while time.monotonic() < until:
            got = self._read_some(0)
            if not got:
                return
            collector.feed(got)
            self._strip_sentinels(collector, keep=None)
            collector.trim()

    def _read_until(self, collector: _Collector, seq: int, deadline: float) -> _Outcome:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _Outcome("timeout")
            got = self._read_some(remaining)
            if got is None:
                return _Outcome("died")
            if not got:
                continue
            collector.feed(got)
            if self._awaiting_start is not None and not self._cut_echo(collector):
                continue  # readline's echo of the line: kept whole until the marker cuts it
            status = self._strip_sentinels(collector, keep=seq, window=len(got))
            if status is not None:
                return _Outcome("done", status)
            collector.trim()

    def _await_prompt(self, collector: _Collector, deadline: float) -> bool:
        """Terminal shell, after `run`: let readline draw its prompt before keys are typed, or
        the terminal would echo them once itself and once more at the prompt (typeahead)."""
        due, self._prompt_due = self._prompt_due, False
        if not due:
            return True
        seen = bool(collector.buf)
        quiet_since = time.monotonic()
        while True:
            now = time.monotonic()
            wait = min(deadline, now + 1.0) - now if not seen else quiet_since + 0.02 - now
            if wait <= 0:
                return True
            got = self._read_some(wait)
            if got is None:
                return False
            if got:
                seen = True
                quiet_since = time.monotonic()
                collector.feed(got)
                self._strip_sentinels(collector, keep=None)

    def _own_match(
        self, pattern: re.Pattern[bytes], buf: bytearray, start: int
    ) -> re.Match[bytes] | None:
        """The first match of `pattern` from `start` that carries this shell's token (one
        printed with another token, by the agent say, is output like any other)."""
        while (match := pattern.search(buf, start)) is not None:
            if match[1] == self._token:
                return match
            start = match.start() + 1
        return None

    def _cut_echo(self, collector: _Collector) -> bool:
        """Terminal shell: drop everything up to the command's start marker once it came."""
        match = self._own_match(_START_MARKER, collector.buf, 0)
        if match is None or int(match[2]) != self._awaiting_start:
            return False
        del collector.buf[: match.end()]
        self._awaiting_start = None
        return True

    def _strip_sentinels(
        self, collector: _Collector, keep: int | None, window: int | None = None
    ) -> int | None:
        """Remove sentinel lines; if the one numbered `keep` is found, cut there, return status."""
        buf = collector.buf
        start = 0 if window is None else max(0, len(buf) - window - 128)
        while True:
            match = self._own_match(_SENTINEL, buf, start)
            if match is None:
                return None
            seq, status, begin, end = int(match[2]), int(match[3]), match.start(), match.end()
            if keep is not None and seq == keep:
                self._pending = bytes(buf[end:])
                del buf[begin:]
                return status
            del buf[begin:end]
            start = begin

    def _death_status(self) -> int | None:
        return self._child.exit_status() if self._child is not None else None

    def _handle_death(self) -> None:
        if self.on_death is not None:
            self.on_death()

    def _result(
        self,
        collector: _Collector,
        began: float,
        exit_code: int | None,
        timed_out: bool,
        restarted: bool,
        notes: list[str],
    ) -> RunResult:
        raw, truncated = collector.finish()
        if self._left.encode() in raw or b"__tg_c" in raw:  # our lines, traced or echoed
            raw = b"\n".join(line for line in raw.split(b"\n") if not self._ours(line))
        output = raw.replace(b"\r\n", b"\n").decode("utf-8", "replace")
        if notes:
            sep = "" if not output or output.endswith("\n") else "\n"
            output += sep + "\n".join(notes) + "\n"
        return RunResult(
            output=output,
            exit_code=exit_code,
            duration=time.monotonic() - began,
            timed_out=timed_out,
            truncated=truncated,
            restarted=restarted,
            raw=raw,
        )
