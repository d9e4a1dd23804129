"""One episode's way to the model: its token, its URLs, its recorded calls, its probe."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from termgym.chat import PROBE_QUESTION
from termgym.errors import AgentError
from termgym.gateway._probe import last_conversation, probe_answer, probe_request
from termgym.gateway._transcript import transcript
from termgym.gateway._upstream import Upstream
from termgym.recording import CallsWriter, ModelCall


class Owner(Protocol):
    """What a route asks of its gateway (`termgym.gateway.Gateway`)."""

    upstream: Upstream
    port: int

    @property
    def host_origin(self) -> str:
        """The gateway on the host's loopback."""

    def send(self, index: int, like: ModelCall, body: dict[str, Any], *, t: float,
             actions: int) -> ModelCall:  # fmt: skip
        """Send a probe's request upstream as a call like `like`."""

    def forget(self, route: Route) -> None:
        """The route closed."""


class Route:
    """An episode's route through a gateway (`Gateway.open_route`); see docs/agents.md.

    Attributes:
        episode_id: The episode its calls are recorded for.
        token: The episode's secret: the API key its agent is given. It opens this route
            only, and only while it is open.
    """

    def __init__(
        self,
        gateway: Owner,
        episode_id: str,
        token: str,
        *,
        record_to: Path | None = None,
        actions: Callable[[], int] | None = None,
    ) -> None:
        self._gateway = gateway
        self.episode_id = episode_id
        self.token = token
        self._actions = actions
        self._lock = threading.Lock()
        self._calls: list[ModelCall] = []
        self._next = 0
        self._probe: list[dict[str, Any]] = []
        self._opened = time.monotonic()
        self._closed = False
        self._writer = (
            CallsWriter(
                record_to,
                {
                    "episode_id": episode_id,
                    "upstream": gateway.upstream.shown,
                    "started": time.time(),
                },
            )  # fmt: skip
            if record_to is not None
            else None
        )

    # ---- where the agent finds it --------------------------------------------------------

    @property
    def sandbox_origin(self) -> str:
        """The gateway inside a sandbox with its mount: Anthropic clients' base URL."""
        return f"http://127.0.0.1:{self._gateway.port}"

    @property
    def sandbox_url(self) -> str:
        """The gateway inside a sandbox, with the upstream's path: OpenAI clients' base URL."""
        return self.sandbox_origin + self._gateway.upstream.base_path

    @property
    def host_origin(self) -> str:
        """The gateway on the host's loopback (a gateway made with host=True)."""
        return self._gateway.host_origin

    @property
    def host_url(self) -> str:
        """The gateway on the host's loopback, with the upstream's path."""
        return self.host_origin + self._gateway.upstream.base_path

    def sandbox_env(self) -> dict[str, str]:
        """The variables OpenAI's and Anthropic's clients read, for an agent in the sandbox."""
        return self._env(self.sandbox_origin, self.sandbox_url)

    def host_env(self) -> dict[str, str]:
        """The same variables for an agent on the host."""
        return self._env(self.host_origin, self.host_url)

    def _env(self, origin: str, url: str) -> dict[str, str]:
        return {
            "OPENAI_BASE_URL": url, "OPENAI_API_KEY": self.token,
            "ANTHROPIC_BASE_URL": origin, "ANTHROPIC_API_KEY": self.token,
            "ANTHROPIC_AUTH_TOKEN": self.token,
        }  # fmt: skip

    # ---- what went through it --------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Closed: its token opens nothing."""
        return self._closed

    def calls(self) -> tuple[ModelCall, ...]:
        """Every call so far (the probe's included), in the order they began."""
        with self._lock:
            return tuple(sorted(self._calls, key=lambda c: c.index))

    def transcript(self) -> list[dict[str, Any]]:
        """The calls as a termgym transcript (docs/agents.md), the probe's entries last."""
        entries = transcript(self.calls())
        with self._lock:
            return entries + [dict(e) for e in self._probe]

    def probe(
        self, mode: str = "ask", prefill: str | None = None, into: str = "answer"
    ) -> str | None:
        """Ask the disclosure question once the agent is done (termgym.gateway._probe): its
        last conversation sent again with the question (or its prefill). The question and
        the answer join the transcript. None when the agent made no model call.

        Raises:
            AgentError: the endpoint refused or failed (it is recorded in the transcript
                too), or `mode`/`prefill` cannot be put to this API.
        """
        if mode not in ("ask", "prefill"):
            raise AgentError(f"gateway probe: mode: expected ask or prefill, got {mode!r}")
        if self._closed:
            raise AgentError(
                f"gateway probe: the route of {self.episode_id} is closed; probe before close()"
            )
        last = last_conversation(self.calls())
        if last is None:
            return None
        body, text = probe_request(last, mode, prefill, into)
        index, actions, t = self.begin()
        entry = {"step": actions, "call": index, "api": last.api, "reasoning": None}
        asked = {"role": "probe_question", "content": PROBE_QUESTION} if text is None \
            else {"role": "probe_prefill", "content": text}  # fmt: skip
        self._add_probe({**entry, **asked})
        call = self._gateway.send(index, last, body, t=t, actions=actions)
        self.record(call)
        answer = {**entry, "step": actions + 1, "role": "probe", "probe_mode": mode}
        try:
            content, reasoning = probe_answer(call, text)
        except AgentError as exc:
            self._add_probe({**answer, "content": "", "error": str(exc)})
            raise
        self._add_probe({**answer, "content": content, "reasoning": reasoning})
        return content

    def _add_probe(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._probe.append(entry)

    # ---- the gateway's side ----------------------------------------------------------------

    def begin(self) -> tuple[int, int, float]:
        """A call begins: its index, the actions run so far, seconds since the opening."""
        actions = self._actions() if self._actions is not None else 0
        with self._lock:
            index, self._next = self._next, self._next + 1
        return index, actions, time.monotonic() - self._opened

    def record(self, call: ModelCall) -> None:
        """A call ended: keep it, and append it to the file."""
        with self._lock:
            self._calls.append(call)
        if self._writer is not None:
            self._writer.call(call)

    def revoke(self) -> None:
        """Its token opens nothing from now on (the agent's time is up; a call under way
        ends as it ends), while the calls, the transcript and `probe()`, which goes from
        the host, stay: `close()` follows (safe twice)."""
        self._gateway.forget(self)

    def close(self) -> None:
        """Its token opens nothing from now on; the file is synced and closed (safe twice).
        The calls and the transcript stay readable."""
        if self._closed:
            return
        self._closed = True
        self._gateway.forget(self)
        if self._writer is not None:
            self._writer.close()

    def __enter__(self) -> Route:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
