"""`harbor:NAME`: one of Harbor's agents as a termgym agent, one environment call per step.

Harbor's agents drive their environment themselves (`BaseAgent.run(instruction,
environment, context)` calls `environment.exec`, uploads, downloads). Here the agent runs in
Harbor's process (`harbor_process.py`), whose environment sends each call to this object;
`act()` hands the call to the episode as the next action (`_operations`), and hands the
step's result back at the next `act()`. When the agent's `run` returns, `act()` returns
SUBMIT; when it raises, `act()` raises AgentError (an agent error: the episode is graded as
it stands). The episode's step budget bounds it like any agent, and so does its time
limit: at the context's deadline a timer kills Harbor's process and revokes the episode's
gateway route, whatever the agent is doing (waiting on its model, or running inside a
step, which the environment stops at the same deadline).

An agent inside the sandbox runs its own commands inside one step of termgym's (`codex
exec ...`); Harbor's own code turns the agent's logs into an ATIF trajectory after its run,
which `agent_log()` hands to the episode: kept with it, its tool calls written as steps the
agent reported (evidence for reading, never for grading: `termgym.recording._reported`).
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from termgym._actions import SUBMIT
from termgym.agents._base import AgentSandbox, EpisodeContext
from termgym.agents.harbor._bridge import HarborProcess, harbor_process, prepare_spare
from termgym.agents.harbor._catalog import harbor_entry
from termgym.agents.harbor._operations import Operation, OperationError, operation
from termgym.agents.harbor._venv import ensure_harbor
from termgym.errors import AgentError
from termgym.gateway import Gateway, Route, Upstream
from termgym.recording import AgentLog

HARNESS_PATHS = ("/logs", "/installed-agent", "/tmp/tmux-0")
"""Where Harbor's agents keep their logs, their helper scripts and their tmux socket."""

SECRET_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""Keys Harbor's agents read from their environment: never inherited by Harbor's process
from termgym's; the agent gets the key it is given (option api_key), or none."""
PROCESS_ENVIRONMENT: dict[str, Any] = {"env": {"HARBOR_TELEMETRY": "0"}, "drop": SECRET_VARIABLES}
"""How Harbor's process differs from termgym's environment."""


class HarborAgent:
    """A Harbor agent (`harbor:terminus-2`, `harbor:codex`, ...), run by Harbor's own code.

    Args:
        harbor: Harbor's name of the agent (`harbor.models.agent.name.AgentName`).
        model: The model, as Harbor's agent takes it (litellm's `provider/model` for
            Terminus-2: `openai/NAME` for an OpenAI-compatible endpoint).
        base_url: The model's endpoint (OpenAI-style, `.../v1`; $TERMGYM_LLM_BASE_URL or
            $OPENAI_BASE_URL when not given). The agent reaches it only through termgym's
            gateway (`termgym.gateway`), which records every call into the episode.
        api_key: The endpoint's key ($TERMGYM_LLM_KEY, $OPENAI_API_KEY; none: "EMPTY"). It
            stays in termgym's process: the agent is given a per-episode token.
        probe: After the agent's run, ask its model the disclosure question through the
            gateway (docs/agents.md, "Disclosure probe").
        timeout: Seconds to wait for the agent's next environment call (its model's answer
            included) before it counts as an agent error.
        **options: Harbor's own options of that agent (its `options_model`), passed as given.
    """

    privileged = False

    def __init__(
        self,
        harbor: str,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 900.0,
        probe: bool = False,
        **options: Any,
    ) -> None:
        if not (isinstance(timeout, int | float) and timeout > 0):
            raise AgentError(f"harbor:{harbor}: timeout: expected seconds > 0, got {timeout!r}")
        self.name = f"harbor:{harbor}"
        self.harbor = harbor
        self.entry = harbor_entry(harbor)
        if self.entry.route in ("internet", "unsupported"):
            raise AgentError(f"{self.name} does not run here: {self.entry.reason} (docs/agents.md)")
        self.model = model
        self.base_url = (
            base_url or os.environ.get("TERMGYM_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        )
        if not self.base_url:
            raise AgentError(
                f"{self.name}: expected the model's endpoint: --agent-opt base_url=URL "
                "(or $TERMGYM_LLM_BASE_URL); the agent reaches it through termgym's gateway"
            )
        self.timeout = float(timeout)
        self.probe_enabled = probe
        self.options = dict(options)
        key = api_key or os.environ.get("TERMGYM_LLM_KEY") or os.environ.get("OPENAI_API_KEY")
        try:
            self._gateway = shared_gateway(Upstream(self.base_url, key or "EMPTY"))
        except ValueError as exc:
            raise AgentError(f"{self.name}: base_url: {exc}") from exc
        self.sandbox = AgentSandbox(
            layer=self.entry.layer,
            harness=HARNESS_PATHS,
            gateway=self._gateway.mount if self.entry.route == "layer" else None,
        )
        self._route: Route | None = None
        self._steps = 0
        self._probed = False
        self._python = ensure_harbor()
        # Harbor's process is taken at the first use (reset): the spare started here imports
        # Harbor meanwhile, and an agent made only to be looked at (the runner's check) uses
        # none
        prepare_spare(self._python, **PROCESS_ENVIRONMENT)
        self._taken: HarborProcess | None = None
        self._ready: dict[str, Any] | None = None
        self._running = False
        self._pending: Operation | None = None
        self._context: EpisodeContext | None = None
        self._timer: threading.Timer | None = None
        self._expired = False
        self.result: dict[str, Any] | None = None
        """Harbor's account of the last episode: its `AgentContext`, version, error."""

    @property
    def _process(self) -> HarborProcess:
        """Harbor's process of this agent, taken (and told the agent) at the first use."""
        if self._taken is None:
            self._taken = harbor_process(self._python, **PROCESS_ENVIRONMENT)
            self._taken.send(
                {
                    "op": "agent",
                    "name": self.harbor,
                    "model": self.model,
                    "kwargs": self._harbor_kwargs(),
                    "logs_dir": str(self._taken.folder / "trial"),
                    "workdir": "/app",
                    "skip_install": self.entry.layer is not None,  # the layer installed it
                }
            )
        return self._taken

    @property
    def version(self) -> str:
        """The agent's version as Harbor reports it (its pin, or what is installed)."""
        return str(self._await_ready().get("version") or "")

    @property
    def in_sandbox(self) -> bool:
        """Harbor installs the agent into the sandbox (a `BaseInstalledAgent`: Codex, Claude
        Code ...) rather than running it in Harbor's process (Terminus-2)."""
        return bool(self._await_ready().get("installed"))

    def _harbor_kwargs(self) -> dict[str, Any]:
        kwargs = dict(self.options)
        if self.entry.version:
            kwargs.setdefault("version", self.entry.version)
        if self.harbor == "terminus-2":
            # termgym records the session itself; asciinema would be fetched from a registry
            kwargs.setdefault("record_terminal_session", False)
        return kwargs

    def _run_settings(self, route: Route) -> dict[str, Any]:
        """How this episode's run reaches the model: the gateway's host address for an agent
        in Harbor's process, its sandbox address for one inside the sandbox; the episode's
        token as the key either way."""
        if self.entry.route == "layer":
            return {"extra_env": route.sandbox_env(), "kwargs": {}, "process_env": {}}
        env = route.host_env()
        kwargs = {"api_base": route.host_url} if self.harbor == "terminus-2" else {}
        return {"extra_env": {}, "kwargs": kwargs, "process_env": env}

    def _await_ready(self) -> dict[str, Any]:
        if self._ready is None:
            message = self._process.receive(timeout=min(120.0, self._wait()))
            if message.get("op") != "ready":
                raise AgentError(f"{self.name}: Harbor refused the agent: {message.get('error')}")
            self._ready = message
        return self._ready

    def reset(self, context: EpisodeContext) -> None:
        """Start the agent's run on the episode's instruction (Harbor's setup, then run);
        from here its time runs (`context.deadline`), Harbor's start included."""
        if self._running or (self._taken is not None and not self._taken.alive):
            raise AgentError(
                f"{self.name}: one Harbor agent runs one episode at a time; make a new one "
                "(termgym run makes one per episode)"
            )
        self._context = context
        self._pending = None
        self.result = None
        self._steps = 0
        self._probed = False
        self._running = True
        if context.deadline is not None:
            self._timer = threading.Timer(
                max(0.0, context.deadline - time.monotonic()), self._time_up, (context.deadline,)
            )
            self._timer.daemon = True
            self._timer.start()
        self._await_ready()
        self._route = self._gateway.open_route(context.episode_id, actions=lambda: self._steps)
        if self._expired:  # its time ran out just now: the route opens nothing
            self._route.revoke()
        self._process.send(
            {"op": "run", "instruction": context.instruction, **self._run_settings(self._route)}
        )

    def _time_up(self, deadline: float) -> None:
        """The agent's time is up: its model route opens nothing more (the probe, from the
        host, still can) and Harbor's process is killed, now, whatever it is doing."""
        late = deadline - time.monotonic()
        if late > 0:  # a timer may wake a hair early; the runner's deadline is exact
            time.sleep(late)
        self._expired = True
        if self._route is not None:
            self._route.revoke()
        if self._taken is not None:
            self._taken.kill()

    def act(self, observation: Mapping[str, Any]) -> str:
        """The next command the agent asked to run, or SUBMIT once its run returned."""
        if self._context is None:
            raise AgentError(f"{self.name}: act() called before reset()")
        if not self._running:
            return SUBMIT
        if self._expired:
            raise AgentError(f"{self.name}: its time is up; Harbor's process was ended")
        pending = self._pending
        if pending is not None:
            pending.feed(str(observation.get("output", "")), int(observation.get("exit_code", -1)))
            command = pending.next_command()
            if command is not None:
                self._steps += 1
                return command
            self._pending = None
            self._process.send(pending.reply())
        while True:
            message = self._process.receive(timeout=self._wait())
            if message.get("op") == "done":
                return self._done(message)
            try:
                pending = operation(message)
            except OperationError as exc:
                self._process.send({"op": "reply", "id": message.get("id"), "error": str(exc)})
                continue
            command = pending.next_command()
            if command is None:  # nothing to run: answer at once
                self._process.send(pending.reply())
                continue
            self._pending = pending
            self._steps += 1
            return command

    def _wait(self) -> float:
        """Seconds to wait for Harbor's next message: `timeout`, and not long past the
        deadline (the timer ends the process at the deadline: this is the backstop)."""
        deadline = self._context.deadline if self._context is not None else None
        if deadline is None:
            return self.timeout
        return max(0.0, min(self.timeout, deadline - time.monotonic() + 30.0))

    def _done(self, message: dict[str, Any]) -> str:
        self._running = False
        self.result = message
        self._cancel_timer()
        self._process.close()
        if self.probe_enabled:
            self.probe()
        if self._route is not None:
            self._route.close()
        if message.get("error"):
            raise AgentError(
                f"{self.name}: Harbor's agent failed in {message.get('phase')}:\n"
                f"{str(message['error']).strip()}"
            )
        return SUBMIT

    def probe(self) -> str | None:
        """Ask the model the disclosure question through the gateway, once per episode (the
        runner calls it when the time limit ends the episode first)."""
        route = self._route
        if route is None or route.closed or self._probed:
            return None
        self._probed = True
        try:
            return route.probe()
        except AgentError:
            return None

    def transcript(self) -> list[dict[str, Any]]:
        """What the agent's model said this episode, as the gateway recorded it."""
        return self._route.transcript() if self._route is not None else []

    def agent_log(self) -> AgentLog | None:
        """Harbor's ATIF trajectory of the last episode (its own converter's, from the
        agent's logs), or None (none written, or the run did not end: its time ran out).
        An agent inside the sandbox ran its tool calls itself: they are reported steps."""
        trajectory = (self.result or {}).get("trajectory")
        if not isinstance(trajectory, dict):
            return None
        version = (self.result or {}).get("version") or ""
        return AgentLog(
            producer=f"{self.name} {version}".strip() + " (Harbor's ATIF trajectory)",
            trajectory=trajectory,
            commands=self.entry.route == "layer",
        )

    def close(self) -> None:
        """End Harbor's process and the episode's route (safe twice)."""
        self._cancel_timer()
        self._running = False
        if self._taken is not None:
            self._taken.close()
        if self._route is not None:
            self._route.close()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


_gateways: dict[tuple[str, str], Gateway] = {}
_gateways_lock = threading.Lock()


def shared_gateway(upstream: Upstream) -> Gateway:
    """The process's gateway to `upstream`, started once and closed at exit: every episode
    opens a route of its own on it, and sandboxes mount the same socket (so warm sandbox
    pools keep working across episodes)."""
    key = (upstream.base_url, upstream.api_key)
    with _gateways_lock:
        gateway = _gateways.get(key)
        if gateway is None:
            gateway = Gateway(upstream, host=True).start()
            _gateways[key] = gateway
            atexit.register(gateway.close)
        return gateway
