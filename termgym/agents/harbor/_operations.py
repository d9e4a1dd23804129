"""What a Harbor environment call becomes in a termgym episode: one or more steps (shell
commands run in the episode's shell, recorded like any step), and the reply made of their
results.

- `exec(command, cwd, env, timeout_sec, user)`: one step, `bash -c COMMAND` in a fresh
  bash, as Harbor's Docker environment runs it (`docker compose exec ... bash -c`), so
  nothing it does (cd, export) stays in the episode's shell: `env -C CWD` for cwd, `K=V`
  for env, coreutils `timeout` for timeout_sec (exit 124 then reads as Harbor's "timed
  out"), stdin from /dev/null (Docker's exec attaches none). Output is stdout and stderr
  together, as Harbor's Docker environment returns them. Commands run as the sandbox's
  root: a call for another user is refused with the reason.
- `upload_file` / `upload_dir`: the bytes travel inside the commands, base64 in a quoted
  heredoc (a tar for a folder), in steps of at most CHUNK characters.
- `download_file` / `download_dir`: one step prints the file (a tar for a folder) as base64;
  the host decodes it into the target.
"""

from __future__ import annotations

import base64
import binascii
import io
import shlex
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHUNK = 60_000
"""Base64 characters per upload step (an action holds at most 100,000 characters)."""

STAGING = "/tmp/.termgym-transfer"
ROOT_USERS = (None, "root", 0, "0")


class OperationError(Exception):
    """A call that cannot be done as asked; its message goes back to the agent."""


@dataclass
class Operation:
    """Steps to run for one request, then the reply."""

    request_id: int
    commands: list[str] = field(default_factory=list)
    results: list[tuple[str, int]] = field(default_factory=list)

    def next_command(self) -> str | None:
        """The next command to run, or None once every one has run."""
        done = len(self.results)
        return self.commands[done] if done < len(self.commands) else None

    def feed(self, output: str, exit_code: int) -> None:
        """The result of the command last handed out."""
        self.results.append((output, exit_code))
        if exit_code != 0 and self.stops_on_failure:
            del self.commands[len(self.results) :]

    stops_on_failure = True

    def reply(self) -> dict[str, Any]:
        """The answer to the request, once every command has run."""
        raise NotImplementedError


@dataclass
class Exec(Operation):
    """`environment.exec`: one step."""

    timeout: int | None = None

    stops_on_failure = False

    def reply(self) -> dict[str, Any]:
        output, code = self.results[-1]
        if self.timeout and code == 124:
            return _error(self.request_id, f"Command timed out after {self.timeout} seconds")
        return _ok(self.request_id, output, code)


@dataclass
class Upload(Operation):
    """`upload_file` / `upload_dir`: the bytes in the commands."""

    target: str = ""

    def reply(self) -> dict[str, Any]:
        output, code = self.results[-1]
        if code != 0:
            return _error(
                self.request_id, f"upload to {self.target} failed (exit {code}): {output[-500:]}"
            )
        return _ok(self.request_id, "", 0)


@dataclass
class Download(Operation):
    """`download_file` / `download_dir`: base64 printed, decoded on the host."""

    source: str = ""
    target: Path = Path()
    is_dir: bool = False

    def reply(self) -> dict[str, Any]:
        output, code = self.results[-1]
        if code != 0:
            return _error(
                self.request_id, f"download of {self.source} failed (exit {code}): {output[-500:]}"
            )
        try:
            data = base64.b64decode("".join(output.split()), validate=True)
            if self.is_dir:
                self.target.mkdir(parents=True, exist_ok=True)
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                    tar.extractall(self.target, filter="data")
            else:
                self.target.parent.mkdir(parents=True, exist_ok=True)
                self.target.write_bytes(data)
        except (binascii.Error, tarfile.TarError, OSError, ValueError) as exc:
            return _error(
                self.request_id,
                f"download of {self.source}: could not unpack it ({exc}); "
                "too large for one step's output?",
            )
        return _ok(self.request_id, "", 0)


def exec_command(
    command: str,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout: int | None = None,
) -> str:
    """The step that runs `command` as Harbor's Docker environment would."""
    parts: list[str] = []
    if cwd or env:
        parts.append("env")
        if cwd:
            parts += ["-C", shlex.quote(cwd)]
        parts += [shlex.quote(f"{key}={value}") for key, value in (env or {}).items()]
    if timeout:
        parts += ["timeout", "-k", "5", str(int(timeout))]
    parts += ["bash", "-c", shlex.quote(command)]
    return " ".join(parts) + " </dev/null"


def operation(message: dict[str, Any]) -> Operation:
    """The steps of one request from Harbor's process.

    Raises:
        OperationError: the request cannot be done here (another user, a missing file).
    """
    op, rid = message.get("op"), int(message.get("id", 0))
    if op == "exec":
        if message.get("user") not in ROOT_USERS:
            raise OperationError(
                f"termgym runs an agent's commands as the sandbox's root; exec as user "
                f"{message.get('user')!r} is not supported"
            )
        timeout = message.get("timeout")
        command = exec_command(message["command"], message.get("cwd"), message.get("env"), timeout)
        return Exec(rid, [command], timeout=timeout)
    if op == "upload":
        return _upload(rid, Path(message["source"]), str(message["target"]), bool(message["dir"]))
    if op == "download":
        source, is_dir = str(message["source"]), bool(message["dir"])
        quoted = shlex.quote(source)
        command = (
            f"tar -C {quoted} -czf - . | base64 -w0" if is_dir else f"base64 -w0 {quoted}"
        ) + f"  # harbor: download {'dir' if is_dir else 'file'} {source}"
        return Download(rid, [command], source=source, target=Path(message["target"]),
                        is_dir=is_dir)  # fmt: skip
    raise OperationError(f"unknown request {op!r}; expected exec, upload or download")


def _upload(rid: int, source: Path, target: str, is_dir: bool) -> Upload:
    try:
        if is_dir:
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
                tar.add(source, arcname=".")
            data = buffer.getvalue()
        else:
            data = source.read_bytes()
    except OSError as exc:
        raise OperationError(f"upload of {source}: {exc}") from exc
    encoded = base64.b64encode(data).decode()
    chunks = [encoded[i : i + CHUNK] for i in range(0, len(encoded), CHUNK)] or [""]
    quoted, staged = shlex.quote(target), f"{STAGING}-{rid}"
    kind = "dir" if is_dir else "file"
    what = f"# harbor: upload {kind} {source.name} -> {target} ({len(data)} bytes)"
    unpack = (
        f"mkdir -p {quoted} && tar -xzf {staged} -C {quoted}"
        if is_dir
        else f"mkdir -p $(dirname {quoted}) && mv {staged} {quoted}"
    )
    commands = []
    for index, chunk in enumerate(chunks):
        redirect = ">" if index == 0 else ">>"
        commands.append(
            f"{what}\nbase64 -d {redirect} {staged} <<'TERMGYM_UPLOAD'\n{chunk}\nTERMGYM_UPLOAD"
        )
    commands[-1] += f"\n{unpack}"
    return Upload(rid, commands, target=target)


def _ok(request_id: int, stdout: str, code: int) -> dict[str, Any]:
    return {"op": "reply", "id": request_id, "stdout": stdout, "return_code": code}


def _error(request_id: int, text: str) -> dict[str, Any]:
    return {"op": "reply", "id": request_id, "error": text}
