"""The Harbor process: `harbor_process.py` run by Harbor's own interpreter, spoken to in
JSON lines over its stdin and stdout (the messages are listed in that file's docstring).

One process per agent object (`harbor_process`). Harbor's import takes seconds (litellm and
its kin: 4 to 8 s on a busy 2-core machine), so each agent is handed a spare process started
when the agent before it was made, its imports done meanwhile, and a new spare is started
for the next agent; a spare has run nothing of any agent. A process is killed (its whole
session) when its agent is done with it or closed, when the agent's time is up, when it is
garbage-collected, or when termgym exits (the spare too), whichever comes first; one whose
termgym dies unannounced ends when its stdin closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from termgym.errors import AgentError

PROCESS_FILE = Path(__file__).with_name("harbor_process.py")

_spares: dict[tuple[str, tuple[tuple[str, str], ...]], HarborProcess] = {}
_spares_lock = threading.Lock()


def harbor_process(
    python: Path, env: Mapping[str, str] | None = None, drop: tuple[str, ...] = ()
) -> HarborProcess:
    """A Harbor process for one agent: the spare started for it (its imports done while
    the previous agent worked) when one of the same interpreter and environment is alive,
    else a new one; and a new spare for the next agent.

    Args:
        python: Harbor's interpreter (`ensure_harbor()`).
        env: Extra environment variables of the process.
        drop: Variables of termgym's environment the process does not inherit.
    """
    key, environment = _key(python, env, drop)
    with _spares_lock:
        taken = _spare(key)
        if taken is None:
            taken = HarborProcess(python, environment)
        _spares[key] = HarborProcess(python, environment)
    return taken


def prepare_spare(
    python: Path, env: Mapping[str, str] | None = None, drop: tuple[str, ...] = ()
) -> None:
    """Start a spare for the next agent unless one is waiting (arguments as `harbor_process`)."""
    key, environment = _key(python, env, drop)
    with _spares_lock:
        spare = _spare(key)
        _spares[key] = spare if spare is not None else HarborProcess(python, environment)


def _key(
    python: Path, env: Mapping[str, str] | None, drop: tuple[str, ...]
) -> tuple[tuple[str, tuple[tuple[str, str], ...]], dict[str, str]]:
    environment = {**{k: v for k, v in os.environ.items() if k not in drop}, **(env or {})}
    return (str(python), tuple(sorted(environment.items()))), environment


def _spare(key: tuple[str, tuple[tuple[str, str], ...]]) -> HarborProcess | None:
    """Take the live spare of `key`, ending any other (another interpreter, or termgym's
    environment changed since it started: it would carry the old one). Holds the lock."""
    spare = _spares.pop(key, None)
    for other in _spares.values():
        other.close()
    _spares.clear()
    if spare is not None and not spare.alive:
        spare.close()
        return None
    return spare


def spare_processes() -> list[HarborProcess]:
    """The spares waiting for the next agent (idle: each has run nothing of any agent)."""
    with _spares_lock:
        return list(_spares.values())


class HarborProcess:
    """A running `harbor_process.py` and the folder its logs go to (`harbor_process` hands
    agents theirs).

    Args:
        python: Harbor's interpreter (`ensure_harbor()`).
        environment: The process's whole environment (None: termgym's).
    """

    def __init__(self, python: Path, environment: Mapping[str, str] | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="termgym-harbor-"))
        self.stderr_path = self.folder / "harbor.log"
        stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - the child keeps it
        try:
            self.proc = subprocess.Popen(
                [str(python), str(PROCESS_FILE)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=dict(os.environ if environment is None else environment),
                start_new_session=True,
            )
        except OSError as exc:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise AgentError(f"could not start Harbor's interpreter {python}: {exc}") from exc
        finally:
            stderr.close()
        self._buffer = b""
        self._finalizer = weakref.finalize(self, _stop, self.proc, self.folder)

    def send(self, message: dict[str, Any]) -> None:
        """Write one message; AgentError if the process is gone."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise AgentError(f"Harbor's process ended: {self.last_words()}") from exc

    def receive(self, timeout: float | None = None) -> dict[str, Any]:
        """The next message; AgentError if the process ends first or none comes in time."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                raise AgentError(f"Harbor's process said nothing in {timeout:g} s")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                self.proc.wait(timeout=5)
                raise AgentError(
                    f"Harbor's process ended (exit {self.proc.returncode}): {self.last_words()}"
                )
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message = json.loads(line)
        if not isinstance(message, dict):
            raise AgentError(f"Harbor's process sent {line[:200]!r}, expected a JSON object")
        return message

    def last_words(self, lines: int = 12) -> str:
        """The end of what the process wrote to stderr (its traceback, when it crashed)."""
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:]) or "(nothing on stderr)"

    def kill(self) -> None:
        """Kill the process's whole session now; its pipes stay open until `close()`, so a
        reader waiting on it sees it end."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    @property
    def alive(self) -> bool:
        """The process runs."""
        return self.proc.poll() is None

    def close(self) -> None:
        """End the process (its whole session) and remove its folder. Safe twice."""
        self._finalizer()


def _stop(proc: subprocess.Popen[bytes], folder: Path) -> None:
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    if proc.poll() is None:  # nothing of it is kept (its folder goes next): no grace period
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    shutil.rmtree(folder, ignore_errors=True)
