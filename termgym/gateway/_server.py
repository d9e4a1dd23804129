"""The gateway's HTTP side: one request from an agent, checked, forwarded, answered, recorded.

Runs in the server's thread for the connection (stdlib `http.server`, HTTP/1.1, keep-alive).
What an agent sends is untrusted: its token picks the route or the request is refused
(401) before anything is sent upstream; only the model API paths are forwarded (404
otherwise); its credential headers never leave the host; a body past MAX_BODY is refused.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from termgym.gateway._apis import FORWARDED, StreamReader, api_of
from termgym.gateway._upstream import HOP_BY_HOP, Upstream
from termgym.recording import REPLAYED, Api, ModelCall

if TYPE_CHECKING:
    from termgym.gateway._route import Route

log = logging.getLogger(__name__)

MAX_BODY = 64 << 20
"""The largest request body forwarded (bytes): a conversation of a long episode fits."""

KEPT_TEXT = 4000
"""Characters of a body that is not JSON (an error page) kept in the recording."""

IDLE = 900.0
"""Seconds a connection may stay silent before the gateway closes it."""


class Handler(BaseHTTPRequestHandler):
    """One connection from an agent (through a sandbox's relay, or on the host's loopback)."""

    protocol_version = "HTTP/1.1"
    timeout = IDLE
    upstream: Upstream
    route_of: Callable[[str], Route | None]
    """The route a token opens (None: no such open route)."""

    def setup(self) -> None:
        super().setup()
        if self.connection.family != socket.AF_UNIX:  # headers and body go as they are written
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self._serve("POST")

    def do_GET(self) -> None:  # noqa: N802
        self._serve("GET")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        log.debug("gateway: " + format, *args)

    def _serve(self, method: str) -> None:
        began = time.monotonic()
        split = urlsplit(self.path)
        api = api_of(method, split.path, self.upstream.base_path)
        route = self.route_of(_token(self.headers))
        if route is None or api is None:
            self.close_connection = True  # its body is never read
            if route is None:
                self._refuse(401, "authentication_error", "expected this episode's token as "
                             "the API key (Authorization: Bearer, or x-api-key); found none that "
                             "is open")  # fmt: skip
            else:
                self._refuse(404, "not_found_error", f"the model gateway forwards only "
                             f"{FORWARDED} below {self.upstream.base_path or '/'}; got {method} "
                             f"{split.path}")  # fmt: skip
            return
        body = self._body()
        if body is None:
            return
        request: dict[str, Any] = {}
        if body:
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                self._refuse(400, "invalid_request_error", "expected a JSON object as the body")
                return
            request = parsed
        target = split.path + (f"?{split.query}" if split.query else "")
        index, actions, t = route.begin()
        call = _Call(index, api, method, target, request, t, actions, route.record, began)
        call.headers = {k.lower(): v for k, v in self.headers.items() if k.lower() in REPLAYED}
        try:
            self._forward(call, body)
        finally:
            call.finish()

    def _body(self) -> bytes | None:
        """The request's body (None: refused, the answer sent)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = bytearray()
            while len(data) <= MAX_BODY:
                line = self.rfile.readline(100).split(b";")[0].strip()
                try:
                    size = int(line or b"0", 16)
                except ValueError:
                    self.close_connection = True
                    self._refuse(400, "invalid_request_error", "expected a chunked body")
                    return None
                if size == 0:
                    while self.rfile.readline(8192).strip():  # trailers
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline(100)
        else:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if 0 <= length <= MAX_BODY:
                return self.rfile.read(length)
        self.close_connection = True
        self._refuse(413, "invalid_request_error", f"expected a body of at most {MAX_BODY} bytes")
        return None

    def _forward(self, call: _Call, body: bytes) -> None:
        upstream = self.upstream
        headers = upstream.request_headers(call.api, dict(self.headers.items()), len(body))
        connection = upstream.connect()
        try:
            try:
                connection.request(call.method, call.path, body=body, headers=headers)
                answer = connection.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                call.error = f"the upstream {upstream.shown} did not answer: {exc}"
                call.finish()
                self._refuse(502, "api_error", call.error)
                return
            call.status = answer.status
            if "text/event-stream" in answer.getheader("Content-Type", ""):
                self._stream(call, answer)
            else:
                self._whole(call, answer)
        finally:
            connection.close()

    def _head(self, answer: http.client.HTTPResponse, extra: dict[str, str]) -> None:
        self.send_response(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in HOP_BY_HOP and name.lower() != "set-cookie":
                self.send_header(name, value)
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()

    def _whole(self, call: _Call, answer: http.client.HTTPResponse) -> None:
        try:
            data = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            call.error = f"the upstream's answer was cut: {exc}"
            call.finish()
            self._refuse(502, "api_error", call.error)
            return
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            call.response = parsed
        else:
            call.text = data[:KEPT_TEXT].decode("utf-8", "replace")
        call.finish()  # recorded before the agent has the answer: it is there when it looks
        self._head(answer, {"Content-Length": str(len(data))})
        self._send(data)

    def _stream(self, call: _Call, answer: http.client.HTTPResponse) -> None:
        call.stream = True
        reader = StreamReader(call.api)
        self._head(answer, {"Transfer-Encoding": "chunked"})
        client_gone = False
        try:
            while True:
                chunk = answer.read1(65536)
                if not chunk:
                    break
                reader.feed(chunk)
                if reader.ended:  # recorded before the agent has the last event
                    call.response = reader.result()
                    call.finish()
                if not client_gone and not self._send(b"%x\r\n%s\r\n" % (len(chunk), chunk)):
                    client_gone = True
                    call.error = "the agent closed the connection before the stream's end"
                    break
        except (OSError, http.client.HTTPException) as exc:
            call.error = f"the upstream's stream was cut: {exc}"
            self.close_connection = True
        call.response = reader.result()
        if call.response is None and call.error is None:
            call.error = "the stream held no event the gateway could read"
        call.finish()
        if not client_gone:
            self._send(b"0\r\n\r\n")

    def _send(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (OSError, ValueError):
            self.close_connection = True
            return False
        return True

    def _refuse(self, status: int, kind: str, message: str) -> None:
        data = json.dumps(
            {"type": "error", "error": {"type": kind, "message": f"termgym gateway: {message}"}}
        ).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
        except (OSError, ValueError):
            self.close_connection = True
            return
        self._send(data)


class _Call:
    """A call in flight: what becomes its ModelCall, recorded once by `finish()`."""

    def __init__(
        self, index: int, api: Api, method: str, path: str, request: dict[str, Any], t: float,
        actions: int, record: Callable[[ModelCall], None], began: float,
    ) -> None:  # fmt: skip
        self.index, self.api, self.method, self.path = index, api, method, path
        self.request, self.t, self.actions = request, t, actions
        self._record, self._began, self._done = record, began, False
        self.status = 0
        self.stream = False
        self.response: Any = None
        self.text = ""
        self.error: str | None = None
        self.headers: dict[str, str] = {}

    def finish(self) -> None:
        """Record the call as it stands (once: later calls do nothing)."""
        if not self._done:
            self._done = True
            self._record(self._call(time.monotonic() - self._began))

    def _call(self, duration: float) -> ModelCall:
        return ModelCall(
            index=self.index, api=self.api, method=self.method, path=self.path,
            status=self.status, stream=self.stream, request=self.request,
            response=self.response, text=self.text, error=self.error, t=self.t,
            duration=duration, actions=self.actions, headers=self.headers,
        )  # fmt: skip


def _token(headers: Any) -> str:
    """The token an agent sent: its Bearer credential, else its x-api-key."""
    given = str(headers.get("Authorization") or "")
    if given[:7].lower() == "bearer ":
        return given[7:].strip()
    return str(headers.get("x-api-key") or headers.get("api-key") or "").strip()
