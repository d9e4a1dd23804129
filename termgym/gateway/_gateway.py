"""The gateway: its servers (a unix socket for sandboxes, the loopback for host agents), routes."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import logging
import os
import secrets
import shutil
import socketserver
import threading
import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from termgym.errors import GatewayError
from termgym.gateway._apis import StreamReader
from termgym.gateway._route import Route
from termgym.gateway._server import KEPT_TEXT, Handler
from termgym.gateway._upstream import Upstream
from termgym.images import cache_dir
from termgym.recording import ModelCall
from termgym.sandbox import GATEWAY_PORT, GatewayMount

log = logging.getLogger(__name__)

DEFAULT_PORT = GATEWAY_PORT
"""The port agents find the gateway at inside their sandbox (http://127.0.0.1:<port>)."""


class _Servers:
    """What both servers share: threads per connection that never outlive the process's
    will to stop, and a connection's failure kept to that connection."""

    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("gateway: a connection failed", exc_info=True)


class _UnixServer(_Servers, socketserver.ThreadingUnixStreamServer):
    pass


class _LoopbackServer(_Servers, ThreadingHTTPServer):
    pass


class Gateway:
    """A model gateway for a run: every model call of its episodes' agents, to one upstream.

    Agents in a sandbox whose `SandboxConfig.gateway` is `mount` reach it at
    http://127.0.0.1:<port> (and reach nothing else); agents on the host, where `host` is
    set, at `host_origin`. Each request must carry the token of an open route
    (`open_route`, one per episode), which is what it is recorded under.

    Args:
        upstream: The endpoint it forwards to, with the key (kept in this process).
        host: Also listen on the host's loopback, on a free port.
        port: The port in the sandboxes.
    """

    def __init__(self, upstream: Upstream, *, host: bool = False, port: int = DEFAULT_PORT) -> None:
        if not isinstance(upstream, Upstream):
            raise TypeError(f"Gateway: expected an Upstream, found {upstream!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"Gateway: port: expected a TCP port (1-65535), found {port!r}")
        self.upstream = upstream
        self.port = port
        self._host = host
        self._routes: dict[bytes, Route] = {}
        self._lock = threading.Lock()
        self._folder: Path | None = None
        self._servers: list[socketserver.BaseServer] = []
        self._threads: list[threading.Thread] = []
        self._host_port = 0
        self._closed = False

    # ---- lifecycle -----------------------------------------------------------------------

    def start(self) -> Gateway:
        """Make the socket (and the loopback server) and serve them, each in a thread.

        Raises:
            GatewayError: the socket or the port could not be made.
        """
        if self._servers:
            return self
        if self._closed:
            raise GatewayError("This gateway was closed; make a new one.")
        handler = type("GatewayHandler", (Handler,), {
            "upstream": self.upstream, "route_of": staticmethod(self._route_of),
        })  # fmt: skip
        try:
            self._folder = _socket_folder()
            sock = self._folder / "gateway.sock"
            unix = _UnixServer(str(sock), handler)
            sock.chmod(0o666)  # a sandbox's root is another uid on bwrap: the token decides
            self._serve(unix)
            if self._host:
                loopback = _LoopbackServer(("127.0.0.1", 0), handler)
                self._host_port = int(loopback.server_address[1])
                self._serve(loopback)
        except OSError as exc:
            self.close()
            raise GatewayError(f"The model gateway could not start: {exc}") from exc
        return self

    def _serve(self, server: socketserver.BaseServer) -> None:
        self._servers.append(server)
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.2},
            name=f"termgym-gateway-{len(self._servers)}", daemon=True,
        )  # fmt: skip
        thread.start()
        self._threads.append(thread)

    def close(self) -> None:
        """Stop serving, close every route and remove the socket (safe twice)."""
        self._closed = True
        with self._lock:
            routes = list(self._routes.values())
        for route in routes:
            route.close()
        servers, self._servers = self._servers, []
        for server in servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads = []
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()

    # ---- what sandboxes and host agents are given -------------------------------------------

    @property
    def mount(self) -> GatewayMount:
        """What a sandbox's config names to reach this gateway (`SandboxConfig.gateway`)."""
        if self._folder is None:
            raise GatewayError("The gateway is not started; call start() first.")
        return GatewayMount(str(self._folder / "gateway.sock"), self.port)

    @property
    def host_origin(self) -> str:
        """http://127.0.0.1:<port> on the host (a gateway made with host=True, started)."""
        if not self._host_port:
            raise GatewayError(
                "This gateway has no host address: make it with host=True and start it."
            )
        return f"http://127.0.0.1:{self._host_port}"

    def open_route(
        self,
        episode_id: str,
        *,
        record_to: Path | None = None,
        actions: Callable[[], int] | None = None,
    ) -> Route:
        """A route for one episode, with a token of its own.

        Args:
            episode_id: The episode whose calls it records.
            record_to: A file to append each call to as it ends (`termgym.recording.
                calls_file(run_dir, episode_id)`); None keeps them in memory only.
            actions: How many actions the episode has run (the transcript's steps).

        Raises:
            GatewayError: the gateway is not started, or closed.
            RecordingError: `record_to` exists already or cannot be written.
        """
        if not self._servers:
            raise GatewayError("The gateway is not started (or closed); call start() first.")
        token = "tg-" + secrets.token_urlsafe(32)
        route = Route(self, episode_id, token, record_to=record_to, actions=actions)
        with self._lock:
            self._routes[_digest(token)] = route
        return route

    def forget(self, route: Route) -> None:
        """A route closed: its token opens nothing from now on."""
        with self._lock:
            self._routes.pop(_digest(route.token), None)

    def _route_of(self, token: str) -> Route | None:
        if not token:
            return None
        with self._lock:
            return self._routes.get(_digest(token))

    # ---- the probe's requests ----------------------------------------------------------------

    def send(self, index: int, like: ModelCall, body: dict[str, Any], *, t: float,
             actions: int) -> ModelCall:  # fmt: skip
        """Send `body` upstream as a call like `like` (its API, path and headers), from the
        host, and return it as a probe's call."""
        data = json.dumps(body).encode()
        given = {"Content-Type": "application/json", **like.headers}
        headers = self.upstream.request_headers(like.api, given, len(data))
        began = time.monotonic()
        status, raw, error, streamed = 0, b"", None, False
        connection = self.upstream.connect()
        try:
            connection.request("POST", like.path, body=data, headers=headers)
            answer = connection.getresponse()
            status = answer.status
            streamed = "text/event-stream" in answer.getheader("Content-Type", "")
            raw = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            error = f"the upstream {self.upstream.shown} did not answer: {exc}"
        finally:
            connection.close()
        response: Any = None
        if streamed:
            reader = StreamReader(like.api)
            reader.feed(raw)
            response = reader.result()
        else:
            with contextlib.suppress(ValueError):
                response = json.loads(raw) if raw else None
        if not isinstance(response, dict):
            response = None
        text = "" if response is not None else raw[:KEPT_TEXT].decode("utf-8", "replace")
        return ModelCall(
            index=index, api=like.api, method="POST", path=like.path, status=status,
            stream=streamed, request=body, response=response,
            text=text, error=error, t=t, duration=time.monotonic() - began, actions=actions,
            origin="probe", headers=dict(like.headers),
        )  # fmt: skip


def _digest(token: str) -> bytes:
    """What routes are looked up by: the token's digest, so a lookup's time says nothing of
    how much of a guessed token was right."""
    return hashlib.sha256(token.encode()).digest()


def _socket_folder() -> Path:
    """A new folder for a gateway's socket (0711: sandboxes' roots reach the socket by its
    name), under termgym's cache; folders of gateways whose process is gone are removed."""
    parent = cache_dir() / "gateways"
    parent.mkdir(parents=True, exist_ok=True)
    for old in parent.iterdir():
        pid = old.name.split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    folder = parent / f"{os.getpid()}-{secrets.token_hex(6)}"
    folder.mkdir(mode=0o711)
    folder.chmod(0o711)
    if len(str(folder / "gateway.sock")) >= 100:
        raise OSError(
            f"the socket's path under {parent} is too long for a unix socket (set TERMGYM_CACHE "
            "to a shorter folder)"
        )
    return folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
