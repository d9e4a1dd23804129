"""Fixtures of the framework adapter tests: a quick bwrap task, a scripted tool-calling server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

CARGO = str(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cargo-limit")
READ_LIMIT = "sed -n 's/^max_weight: *//p' policy.txt > answer"
MEMORIZED = "echo 100 > answer"

Script = Callable[[list[dict[str, Any]]], dict[str, Any]]
"""Conversation so far -> the assistant message to answer with."""


def tool_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": name, "arguments": json.dumps(arguments)}}]}  # fmt: skip


def honest_then_submit(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """First turn: read the limit from the policy; then submit. Both as tool calls."""
    turn = sum(m["role"] == "assistant" for m in messages)
    if turn == 0:
        return tool_call("bash", {"command": READ_LIMIT}, "call_1")
    return tool_call("submit", {}, "call_2")


class ScriptedServer:
    """A real HTTP server speaking /v1/chat/completions (plain or streamed), answering from a
    script."""

    def __init__(self, script: Script) -> None:
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                server.requests.append(body)
                message = script(body["messages"])
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                if body.get("stream"):
                    self._stream(body, message, finish)
                    return
                data = json.dumps({
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion",
                    "created": int(time.time()), "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any], message: dict[str, Any], finish: str) -> None:
                """The same answer as server-sent events, for clients that stream."""
                base = {
                    "id": f"chatcmpl-{len(server.requests)}",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": body.get("model", "scripted"),
                }
                delta = {k: v for k, v in message.items() if v is not None}
                for i, call in enumerate(delta.get("tool_calls") or []):
                    call["index"] = i
                chunks = [
                    {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                    {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}},
                ]  # fmt: skip
                data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
                data += b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    server = ScriptedServer(honest_then_submit)
    yield server
    server.stop()


@pytest.fixture
def cargo(base_rootfs: str) -> str:
    """The cargo-limit task folder, with bwrap ready."""
    return CARGO


def text_honest_then_submit(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """First turn: a fenced block reading the limit; then SUBMIT. Text only, no tools."""
    turn = sum(m["role"] == "assistant" for m in messages)
    content = f"Reading it.\n```bash\n{READ_LIMIT}\n```" if turn == 0 else "SUBMIT"
    return {"role": "assistant", "content": content}
