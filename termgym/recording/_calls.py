"""An episode's model calls, as the model gateway recorded them: one NDJSON file per episode.

`episodes/<episode-id>.calls.ndjson` beside the episode's `.jsonl` and `.cast`: a first line
saying what the file is (`route`: the episode, the upstream's base URL, when it began),
then one line per call, written and flushed as each call ends. The extension keeps it out
of the readers of episode files (`*.jsonl`). The key to the endpoint is never in it: only
request and response bodies are kept, never their headers.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from termgym.errors import RecordingError
from termgym.recording._records import dumps_line

CALLS_SUFFIX = ".calls.ndjson"
"""What an episode's model calls file is named after its episode id."""

Api = Literal["openai-chat", "openai-responses", "anthropic-messages", "other"]
APIS: tuple[Api, ...] = ("openai-chat", "openai-responses", "anthropic-messages", "other")
"""The APIs a call may be of: OpenAI chat completions and responses, Anthropic messages,
and the rest the gateway forwards (model lists, token counts)."""

Origin = Literal["agent", "probe"]

REPLAYED = ("anthropic-version", "anthropic-beta", "openai-beta", "content-type")
"""The request headers a call keeps (lower case): how to read it, never who sent it."""


@dataclass(frozen=True)
class ModelCall:
    """One request through the model gateway and its answer.

    Attributes:
        index: 0-based, in the order the calls began.
        api: Which API (`APIS`), from the request's path.
        method: "POST" or "GET".
        path: The request's path and query, as the agent sent it.
        status: The upstream's HTTP status; 0 when it gave none (unreachable, timed out).
        stream: The answer came as server-sent events (`response` is assembled from them).
        request: The request body (JSON), as sent upstream.
        response: The answer's body (JSON), or for a stream the message its events make;
            None when there was none.
        text: The answer's body where it was not JSON (an error page), cut to 4000 chars.
        error: What went wrong in the gateway (upstream unreachable, stream cut), or None.
        t: Seconds from the route's opening to the request.
        duration: Seconds until the answer's end.
        actions: How many of the episode's actions had run when the call began.
        origin: "agent" (the agent's own call) or "probe" (termgym's disclosure probe).
        headers: The request's headers that say how to read it (`REPLAYED`: an API
            version, its betas), so the probe can send it again; never a credential.
    """

    index: int
    api: Api
    method: str
    path: str
    status: int
    stream: bool
    request: Mapping[str, Any] = field(default_factory=dict)
    response: Mapping[str, Any] | None = None
    text: str = ""
    error: str | None = None
    t: float = 0.0
    duration: float = 0.0
    actions: int = 0
    origin: Origin = "agent"
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The upstream answered 2xx with a body the gateway could read."""
        return 200 <= self.status < 300 and self.response is not None and self.error is None

    def to_line(self) -> dict[str, Any]:
        """The call's JSON object (a line of the calls file)."""
        return {
            "type": "call",
            "index": self.index,
            "api": self.api,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "stream": self.stream,
            "request": self.request,
            "response": self.response,
            "text": self.text,
            "error": self.error,
            "t": self.t,
            "duration": self.duration,
            "actions": self.actions,
            "origin": self.origin,
            "headers": self.headers,
        }

    @classmethod
    def from_line(cls, data: Mapping[str, Any]) -> ModelCall:
        """A call from its line; ValueError naming the field that is not as expected."""
        api, origin = data.get("api"), data.get("origin", "agent")
        if api not in APIS:
            raise ValueError(f"api: expected one of {', '.join(APIS)}, found {api!r}")
        if origin not in ("agent", "probe"):
            raise ValueError(f"origin: expected agent or probe, found {origin!r}")
        request, response = data.get("request") or {}, data.get("response")
        if not isinstance(request, Mapping):
            raise ValueError(f"request: expected a JSON object, found {type(request).__name__}")
        if response is not None and not isinstance(response, Mapping):
            raise ValueError(f"response: expected a JSON object or null, found {response!r:.60}")
        try:
            return cls(
                index=int(data["index"]), api=api, method=str(data.get("method", "POST")),
                path=str(data.get("path", "")), status=int(data.get("status") or 0),
                stream=bool(data.get("stream")), request=request, response=response,
                text=str(data.get("text") or ""), error=data.get("error"),
                t=float(data.get("t") or 0.0), duration=float(data.get("duration") or 0.0),
                actions=int(data.get("actions") or 0), origin=origin,
                headers={str(k): str(v) for k, v in (data.get("headers") or {}).items()},
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"expected index, status, t and duration as numbers: {exc}") from exc


def calls_file(run_dir: Path | str, episode_id: str) -> Path:
    """Where an episode's model calls are recorded in a run folder."""
    if not episode_id or "/" in episode_id or episode_id.startswith("."):
        raise RecordingError(
            f"expected an episode id that is a plain file name, found {episode_id!r}"
        )
    return Path(run_dir) / "episodes" / f"{episode_id}{CALLS_SUFFIX}"


class CallsWriter:
    """Appends an episode's model calls to its file, one flushed line each (thread-safe).

    Args:
        path: The file (`calls_file`); made anew (an existing one is refused).
        route: What the first line says: the episode id, the upstream, when it began.
    """

    def __init__(self, path: Path, route: Mapping[str, Any]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "xb")  # noqa: SIM115 - kept open for the episode
        except FileExistsError as exc:
            raise RecordingError(f"expected a new model calls file; found {path} there") from exc
        except OSError as exc:
            raise RecordingError(f"expected a model calls file that can be written at {path}: "
                                 f"{exc}") from exc  # fmt: skip
        self._lock = threading.Lock()
        self._write({"type": "route", **route})

    def call(self, call: ModelCall) -> None:
        """Append one call (a closed writer drops it)."""
        self._write(call.to_line())

    def _write(self, line: Mapping[str, Any]) -> None:
        with self._lock:
            if self._file.closed:
                return
            self._file.write(dumps_line(line))
            self._file.flush()

    def close(self) -> None:
        """Sync and close the file (safe twice)."""
        with self._lock:
            if not self._file.closed:
                os.fsync(self._file.fileno())
                self._file.close()


@dataclass(frozen=True)
class CallsLog:
    """A calls file read back: its first line, its calls, and the lines left out (why)."""

    route: Mapping[str, Any]
    calls: tuple[ModelCall, ...]
    skipped: tuple[str, ...] = ()


def read_calls(path: Path | str) -> CallsLog:
    """Read an episode's calls file; lines cut short or malformed are left out with a note.

    Raises:
        RecordingError: the file cannot be read.
    """
    try:
        lines = Path(path).read_bytes().split(b"\n")
    except OSError as exc:
        raise RecordingError(f"expected a model calls file at {path}: {exc}") from exc
    route: Mapping[str, Any] = {}
    calls: list[ModelCall] = []
    skipped: list[str] = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError(f"expected a JSON object, found {type(data).__name__}")
            if data.get("type") == "route":
                route = data
            elif data.get("type") == "call":
                calls.append(ModelCall.from_line(data))
            else:
                raise ValueError(f"expected type route or call, found {data.get('type')!r}")
        except ValueError as exc:
            cut = " (the last line, cut short?)" if number == len(lines) else ""
            skipped.append(f"line {number}{cut}: {exc}")
    return CallsLog(route, tuple(calls), tuple(skipped))
