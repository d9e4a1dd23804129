"""Runs in Harbor's own interpreter (Python >= 3.12, Harbor installed): one Harbor agent
whose environment is the termgym episode's sandbox, reached across this process's pipes.

No module of termgym imports this file (`.importlinter`'s `harbor-process` contract):
termgym starts it as a program, `<harbor venv>/bin/python harbor_process.py`, and speaks
JSON lines with it. Harbor's agents are used as Harbor ships them (their prompts, parsers,
install recipes and log parsers); this file only gives them a `BaseEnvironment` whose
`exec`, uploads and downloads are requests to termgym, which runs each as a step of the
episode and answers with its result.

The conversation (every message one JSON object on one line):

    termgym -> here   {"op": "agent", "name", "model", "kwargs", "logs_dir", "workdir",
                       "skip_install"}
    here -> termgym   {"op": "ready", "version", "installed"} | {"op": "failed", "error"}
    termgym -> here   {"op": "run", "instruction", "extra_env", "kwargs", "process_env"}
    here -> termgym   {"op": "exec", "id", "command", "cwd", "env", "timeout", "user"}
                      {"op": "upload", "id", "source", "target", "dir"}
                      {"op": "download", "id", "source", "target", "dir"}
    termgym -> here   {"op": "reply", "id", "stdout", "return_code"} | {"op": "reply",
                       "id", "error"}
    here -> termgym   {"op": "done", "error", "phase", "context", "version", "trajectory"}
    termgym -> here   {"op": "bench", "commands", "rounds", "docker"}  (termgym.bench.agents)
    here -> termgym   exec requests as above, then {"op": "benched", "bridge", "docker"}

Harbor and the libraries it loads may print to stdout: the protocol keeps the original
stdout to itself and points file descriptor 1 at stderr before Harbor is imported.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

_PROTOCOL_OUT = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr
# litellm fetches a price list from the internet when imported unless told not to
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# litellm, which every agent's model settings are parsed with, takes seconds to import: done
# here, before any agent is asked for, so a spare process (termgym/agents/harbor/_bridge.py)
# has it ready
import harbor.llms.litellm_config  # noqa: E402, F401
from harbor.agents.factory import AgentFactory  # noqa: E402
from harbor.agents.installed.base import BaseInstalledAgent  # noqa: E402
from harbor.environments.base import BaseEnvironment, ExecResult  # noqa: E402
from harbor.environments.capabilities import EnvironmentCapabilities  # noqa: E402
from harbor.models.agent.context import AgentContext  # noqa: E402
from harbor.models.agent.name import AgentName  # noqa: E402
from harbor.models.task.config import EnvironmentConfig  # noqa: E402
from harbor.models.trial.paths import EnvironmentPaths, TrialPaths  # noqa: E402


class Channel:
    """The pipes to termgym: requests out, replies matched to them by id."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.next_id = 0
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.lock = asyncio.Lock()

    def send(self, message: dict[str, Any]) -> None:
        _PROTOCOL_OUT.write(json.dumps(message) + "\n")
        _PROTOCOL_OUT.flush()

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a request and wait for its reply. Requests go one at a time: termgym runs
        each as one step of the episode, so concurrent calls of the agent's queue here."""
        async with self.lock:
            self.next_id += 1
            future: asyncio.Future[dict[str, Any]] = self.loop.create_future()
            self.waiting[self.next_id] = future
            self.send({**message, "id": self.next_id})
            reply = await future
        if reply.get("error"):
            raise RuntimeError(reply["error"])
        return reply

    def dispatch(self, message: dict[str, Any]) -> None:
        if message.get("op") == "reply":
            future = self.waiting.pop(int(message.get("id", -1)), None)
            if future is not None and not future.done():
                future.set_result(message)
            return
        self.queue.put_nowait(message)


class TermgymEnvironment(BaseEnvironment):
    """Harbor's view of the episode's termgym sandbox: every call is a step there.

    Capabilities are declared, as Harbor's environments declare theirs: nothing is
    mounted (logs are downloaded), no GPUs, the internet is off.
    """

    def __init__(self, channel: Channel, workdir: str, logs: Path) -> None:
        self.channel = channel
        paths = TrialPaths(trial_dir=logs)
        paths.mkdir()
        super().__init__(
            environment_dir=logs,
            environment_name="termgym",
            session_id="termgym__env",
            trial_paths=paths,
            task_env_config=EnvironmentConfig(workdir=workdir),
        )

    @staticmethod
    def type() -> str:
        return "termgym"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True)

    def _validate_definition(self) -> None:
        return None

    async def start(self, force_build: bool) -> None:
        return None

    async def stop(self, delete: bool) -> None:
        return None

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        reply = await self.channel.request(
            {
                "op": "exec",
                "command": command,
                "cwd": cwd,
                "env": self._merge_env(env) or {},
                "timeout": timeout_sec,
                "user": self._resolve_user(user),
            }
        )
        return ExecResult(stdout=reply.get("stdout"), stderr=None, return_code=reply["return_code"])

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        await self._transfer("upload", str(source_path), target_path, is_dir=False)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        await self._transfer("upload", str(source_dir), target_dir, is_dir=True)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        await self._transfer("download", source_path, str(target_path), is_dir=False)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        await self._transfer("download", source_dir, str(target_dir), is_dir=True)

    async def _transfer(self, op: str, source: str, target: str, *, is_dir: bool) -> None:
        await self.channel.request({"op": op, "source": source, "target": target, "dir": is_dir})


class Session:
    """One Harbor agent, built once, run once per episode."""

    def __init__(self, channel: Channel, spec: dict[str, Any]) -> None:
        self.channel = channel
        self.spec = spec
        self.logs = Path(spec["logs_dir"])
        self.agent = self.make()
        self.installed = isinstance(self.agent, BaseInstalledAgent)

    def make(self, extra_env: dict[str, str] | None = None, **override: Any) -> Any:
        """Harbor's agent, built by Harbor's factory with the options termgym was given (and
        an episode's own: its gateway address and token)."""
        kwargs = {**(self.spec.get("kwargs") or {}), **override}
        if self.spec.get("skip_install"):
            kwargs["skip_install"] = True
        if extra_env:
            kwargs["extra_env"] = extra_env
        agent = AgentFactory.create_agent_from_name(
            AgentName(self.spec["name"]),
            logs_dir=self.logs / "agent",
            model_name=self.spec.get("model"),
            **kwargs,
        )
        agent.session_id = "termgym__agent"
        return agent

    def environment(self) -> TermgymEnvironment:
        return TermgymEnvironment(self.channel, self.spec.get("workdir") or "/app", self.logs)

    async def run(self, message: dict[str, Any]) -> dict[str, Any]:
        """Harbor's trial, for one agent: the log folder made, setup, run, the logs
        downloaded and parsed by the agent's own parser."""
        os.environ.update(message.get("process_env") or {})
        self.agent = self.make(message.get("extra_env"), **(message.get("kwargs") or {}))
        environment = self.environment()
        context = AgentContext()
        phase = "setup"
        error = None
        try:
            await environment.exec(f"mkdir -p {EnvironmentPaths.agent_dir}", user="root")
            with environment.scoped_exec_env(self.agent.extra_env):
                await self.agent.setup(environment=environment)
                phase = "run"
                await self.agent.run(
                    instruction=message["instruction"], environment=environment, context=context
                )
        except Exception:  # noqa: BLE001 - the agent's failure is reported, not raised
            error = traceback.format_exc(limit=8)
        if phase == "run" and self.installed:
            try:
                await environment.download_dir(
                    str(EnvironmentPaths.agent_dir), environment.trial_paths.agent_dir
                )
                if context.is_empty():
                    self.agent.populate_context_post_run(context)
            except Exception:  # noqa: BLE001 - logs are best effort, as in Harbor's trial
                logging.getLogger("termgym").warning(
                    "could not read the agent's logs", exc_info=True
                )
        return {
            "op": "done",
            "error": error,
            "phase": phase,
            "context": context.model_dump(mode="json"),
            "version": self.agent.version(),
            "trajectory": self.trajectory(),
        }

    def trajectory(self) -> Any:
        """The ATIF trajectory the agent's own Harbor code wrote from its logs
        (`trajectory.json` in its logs folder), or None."""
        path = self.logs / "agent" / "trajectory.json"
        try:
            return json.loads(path.read_text()) if path.is_file() else None
        except (OSError, ValueError):
            logging.getLogger("termgym").warning("unreadable %s", path, exc_info=True)
            return None


async def bench(channel: Channel, logs: Path, message: dict[str, Any]) -> dict[str, Any]:
    """Time `environment.exec` of each command, seen from Harbor's side: through termgym's
    environment (every call a step), and as Harbor's Docker environment runs a command (a
    `docker exec ... bash -c` subprocess, read as Harbor reads it) in `docker`, a container."""
    environment = TermgymEnvironment(channel, "/app", logs)
    bridge: list[float] = []
    docker: list[float] = []
    for _ in range(int(message["rounds"])):
        for command in message["commands"]:
            began = time.perf_counter()
            await environment.exec(command)
            bridge.append(time.perf_counter() - began)
            if message.get("docker"):
                began = time.perf_counter()
                process = await asyncio.create_subprocess_exec(
                    "docker", "exec", "-w", "/app", message["docker"], "bash", "-c", command,
                    stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                )  # fmt: skip
                await process.communicate()
                docker.append(time.perf_counter() - began)
    return {"op": "benched", "bridge": bridge, "docker": docker}


async def serve() -> None:
    loop = asyncio.get_running_loop()
    channel = Channel(loop)
    reader = asyncio.StreamReader(limit=1 << 30)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def pump() -> None:
        while True:
            line = await reader.readline()
            if not line:
                channel.queue.put_nowait({"op": "eof"})
                return
            channel.dispatch(json.loads(line))

    pumping = asyncio.ensure_future(pump())
    session: Session | None = None
    try:
        while True:
            message = await channel.queue.get()
            op = message.get("op")
            if op == "eof":
                return
            if op == "agent":
                try:
                    session = Session(channel, message)
                except Exception as exc:  # noqa: BLE001 - a bad option, an unknown agent
                    channel.send({"op": "failed", "error": f"{type(exc).__name__}: {exc}"})
                    continue
                channel.send(
                    {
                        "op": "ready",
                        "version": session.agent.version(),
                        "installed": session.installed,
                    }
                )
            elif op == "run" and session is not None:
                channel.send(await session.run(message))
            elif op == "bench":
                channel.send(await bench(channel, Path(message["logs_dir"]), message))
            else:
                channel.send({"op": "failed", "error": f"unexpected message {op!r}"})
    finally:
        pumping.cancel()


if __name__ == "__main__":
    logging.basicConfig(level=os.environ.get("TERMGYM_HARBOR_LOG", "WARNING"), stream=sys.stderr)
    asyncio.run(serve())
