"""The one endpoint a gateway forwards to, and how a request is sent there with the host's key."""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from termgym.recording import Api

HOP_BY_HOP = frozenset(
    {
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length",
        "accept-encoding", "content-encoding",
    }
)  # fmt: skip
"""Headers that belong to one connection (or that the gateway sets itself): never passed on."""

CREDENTIALS = frozenset({"authorization", "x-api-key", "api-key", "cookie", "proxy-authorization"})
"""Headers that carry a credential: the agent's (its token) are never passed upstream."""


@dataclass(frozen=True)
class Upstream:
    """The model endpoint a gateway forwards to.

    Attributes:
        base_url: Its base URL as an OpenAI client takes it, e.g. http://127.0.0.1:8000/v1
            or https://api.anthropic.com (whose clients add /v1/messages); only its
            scheme, host, port and path count. The gateway keeps the path: agents are
            given the same path on the gateway.
        api_key: The key, sent as `Authorization: Bearer` on OpenAI paths and as
            `x-api-key` on Anthropic's (or as `auth` says). It stays in this process:
            never in a sandbox, a recording or a repr.
        auth: "auto" (as above), "bearer" or "x-api-key" for every path.
        headers: Extra headers sent with every request (e.g. an organisation).
        timeout: Seconds to connect, and the longest silence of an answer.
    """

    base_url: str
    api_key: str = field(default="", repr=False)
    auth: str = "auto"
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 600.0

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"Upstream.base_url: expected an http:// or https:// URL with a host, found "
                f"{self.base_url!r}"
            )
        if parts.query or parts.fragment:
            raise ValueError(
                f"Upstream.base_url: expected no query or fragment, found {self.base_url!r}"
            )
        if self.auth not in ("auto", "bearer", "x-api-key"):
            raise ValueError(
                f"Upstream.auth: expected auto, bearer or x-api-key, found {self.auth!r}"
            )
        if not isinstance(self.timeout, int | float) or self.timeout <= 0:
            raise ValueError(f"Upstream.timeout: expected seconds > 0, found {self.timeout!r}")
        if any(name.lower() in CREDENTIALS | HOP_BY_HOP for name in self.headers):
            raise ValueError(
                "Upstream.headers: expected no credential or connection header (the key goes "
                f"in api_key), found {sorted(self.headers)}"
            )

    @property
    def base_path(self) -> str:
        """The base URL's path without its trailing slash ("" for none)."""
        return urlsplit(self.base_url).path.rstrip("/")

    @property
    def shown(self) -> str:
        """The base URL as recordings and messages show it (no user info)."""
        parts = urlsplit(self.base_url)
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{parts.hostname}{port}{self.base_path}"

    def connect(self) -> http.client.HTTPConnection:
        """A new connection to the endpoint."""
        parts = urlsplit(self.base_url)
        if parts.scheme == "https":
            return http.client.HTTPSConnection(
                parts.hostname or "", parts.port, timeout=self.timeout,
                context=ssl.create_default_context(),
            )  # fmt: skip
        return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=self.timeout)

    def request_headers(self, api: Api, given: Mapping[str, str], length: int) -> dict[str, str]:
        """What goes upstream: the agent's headers less credentials and hop-by-hop ones, the
        extra headers, the key, and the body's length."""
        out = {
            name: value for name, value in given.items()
            if name.lower() not in CREDENTIALS | HOP_BY_HOP
        }  # fmt: skip
        out.update(self.headers)
        if self.api_key:
            style = self.auth
            if style == "auto":
                style = (
                    "x-api-key" if api == "anthropic-messages" or _anthropic(given) else "bearer"
                )
            if style == "bearer":
                out["Authorization"] = f"Bearer {self.api_key}"
            else:
                out["x-api-key"] = self.api_key
        out["Content-Length"] = str(length)
        out["Accept-Encoding"] = "identity"
        return out


def _anthropic(headers: Mapping[str, Any]) -> bool:
    """An Anthropic client's request (its token count, its model list)."""
    return any(name.lower() == "anthropic-version" for name in headers)
