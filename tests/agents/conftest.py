"""Fixtures of the agent tests: a scripted OpenAI-compatible chat server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    """One canned answer: a message (content, optional reasoning and tool calls) or an
    HTTP error."""

    content: str | None = ""
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"
    status: int = 200
    tool_calls: list[dict[str, Any]] | None = None


@dataclass
class ChatServer:
    """Serves /v1/chat/completions from a queue of replies; records every request body."""

    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    prefill: str | None = None
    """How this server continues a trailing assistant message ("continue_final_message",
    "prefix", "trailing"), or None: it refuses one with HTTP 400, as a server that cannot."""

    def __post_init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                refusal = server.refuses(body)
                if refusal:
                    self._send(400, {"error": {"message": refusal, "type": "BadRequestError"}})
                    return
                reply = server.replies.pop(0) if server.replies else Reply(status=500)
                if reply.status != 200:
                    self._send(
                        reply.status,
                        {"error": {"message": "scripted failure", "type": "server_error"}},
                    )
                    return
                message: dict[str, Any] = {"role": "assistant", "content": reply.content}
                if reply.reasoning is not None:
                    message[reply.reasoning_field] = reply.reasoning
                if reply.tool_calls:
                    message["tool_calls"] = reply.tool_calls
                finish = "tool_calls" if reply.tool_calls else "stop"
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "test"),
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def refuses(self, body: dict[str, Any]) -> str:
        """Why a request that ends with a partial assistant message is refused ("": it is not)."""
        messages = body.get("messages") or [{}]
        if messages[-1].get("role") != "assistant":
            return ""
        style = (
            "continue_final_message"
            if body.get("continue_final_message") and body.get("add_generation_prompt") is False
            else "prefix"
            if messages[-1].get("prefix") is True
            else "trailing"
        )
        if self.prefill == style:
            return ""
        return f"this server cannot continue a final assistant message ({style} requested)"

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def reply(
        self,
        content: str | None = "",
        *,
        reasoning: str | None = None,
        reasoning_field: str = "reasoning_content",
        status: int = 200,
    ) -> None:
        """Queue the next answer."""
        self.replies.append(Reply(content, reasoning, reasoning_field, status))

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """Queue an answer that is only a tool call (no content, as servers send them);
        returns the call's id."""
        call_id = f"call_{len(self.replies)}_{name}"
        function = {"name": name, "arguments": json.dumps(arguments or {})}
        self.replies.append(
            Reply(None, tool_calls=[{"id": call_id, "type": "function", "function": function}])
        )
        return call_id

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def chat_server():
    """A real HTTP server speaking the chat-completions API, answering from a script."""
    server = ChatServer().start()
    yield server
    server.stop()
