"""Fixtures of the gateway tests: a scripted model endpoint speaking OpenAI chat completions,
OpenAI responses and Anthropic messages (streamed or not), and a gateway in front of it."""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from termgym.gateway import Gateway, Upstream

KEY = "sk-host-only-" + secrets.token_hex(16)
"""The endpoint's key in these tests, new each session (so no image or cache can hold it): it
must reach the endpoint and nothing else."""


@dataclass
class Turn:
    """One scripted answer: words, reasoning, tool calls (name, arguments), or an HTTP error."""

    text: str = ""
    reasoning: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200


@dataclass
class Seen:
    """One request the endpoint received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ModelServer:
    """A real HTTP server answering each API from one script of turns; every request kept.

    `hold` (a threading.Event), when set before a stream, makes the server send a stream's
    first event and wait for it before the rest (to see that the gateway passes events on
    as they come). `prefill` is how it continues a trailing assistant message on chat
    ("continue_final_message", "prefix", "trailing"); None refuses one with 400. With
    `side_text` set, a request that offers no tools (an agent's side call: a title, a
    summary, a safety check) is answered with that text, leaving the script to the agent's
    own conversation, whatever side calls its version makes.
    """

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.seen: list[Seen] = []
        self.hold: threading.Event | None = None
        self.prefill: str | None = None
        self.side_text: str | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_GET(self) -> None:  # noqa: N802
                server.seen.append(Seen("GET", self.path, _lower(self.headers), {}))
                self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.seen.append(Seen("POST", self.path, _lower(self.headers), body))
                path = self.path.split("?")[0]
                if path.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": 42})
                    return
                refusal = server.refusal(path, body)
                if refusal:
                    self._json(
                        400, {"error": {"message": refusal, "type": "invalid_request_error"}}
                    )
                    return
                if server.side_text is not None and not body.get("tools"):
                    turn = Turn(server.side_text)
                else:
                    turn = server.turns.pop(0) if server.turns else Turn(status=500)
                if turn.status != 200:
                    self._json(turn.status, {"error": {"message": "scripted failure"}})
                    return
                n = len(server.seen)
                kind = (
                    "chat"
                    if path.endswith("/chat/completions")
                    else "responses"
                    if path.endswith("/responses")
                    else "anthropic"
                )
                if body.get("stream"):
                    self._stream(STREAMS[kind](turn, n, body.get("model", "m")))
                else:
                    self._json(200, WHOLE[kind](turn, n, body.get("model", "m")))

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, events: list[bytes]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for i, event in enumerate(events):
                    self.wfile.write(event)
                    self.wfile.flush()
                    if i == 0 and server.hold is not None:
                        server.hold.wait(30)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def refusal(self, path: str, body: dict[str, Any]) -> str:
        """Why a chat request ending with a partial assistant message is refused ("": it is not)."""
        messages = body.get("messages") or [{}]
        if not path.endswith("/chat/completions") or messages[-1].get("role") != "assistant":
            return ""
        style = (
            "continue_final_message"
            if body.get("continue_final_message")
            else "prefix"
            if messages[-1].get("prefix")
            else "trailing"
        )
        return (
            "" if style == self.prefill else f"cannot continue a final assistant message ({style})"
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _lower(headers: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def _sse(data: Any, event: str = "") -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data) if not isinstance(data, str) else data}\n\n".encode()


def _halves(text: str) -> list[str]:
    cut = len(text) // 2
    return [part for part in (text[:cut], text[cut:]) if part]


# ---- OpenAI chat completions -----------------------------------------------------------


def _chat_whole(turn: Turn, n: int, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.reasoning is not None:
        message["reasoning_content"] = turn.reasoning
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(turn.calls)
        ]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if turn.calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _chat_stream(turn: Turn, n: int, model: str) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
        data: dict[str, Any] = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage is not None:
            data["choices"], data["usage"] = [], usage
        return _sse(data)

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": part}) for part in _halves(turn.reasoning or "")]
    out += [chunk({"content": part}) for part in _halves(turn.text)]
    for i, (name, args) in enumerate(turn.calls):
        text = json.dumps(args)
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{n}_{i}",
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        out += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
            for part in _halves(text)
        ]
    out.append(chunk({}, "tool_calls" if turn.calls else "stop"))
    out.append(chunk({}, usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}))
    out.append(_sse("[DONE]"))
    return out


# ---- OpenAI responses ------------------------------------------------------------------


def _response_items(turn: Turn, n: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.reasoning is not None:
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{n}",
                "summary": [{"type": "summary_text", "text": turn.reasoning}],
            }
        )
    if turn.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for i, (name, args) in enumerate(turn.calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{n}_{i}",
                "call_id": f"call_{n}_{i}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        )
    return items


def _responses_whole(turn: Turn, n: int, model: str) -> dict[str, Any]:
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": model,
        "output": _response_items(turn, n),
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    }


def _responses_stream(turn: Turn, n: int, model: str) -> list[bytes]:
    whole = _responses_whole(turn, n, model)
    start = {**whole, "status": "in_progress", "output": []}
    out = [_sse({"type": "response.created", "response": start}, "response.created")]
    for i, item in enumerate(whole["output"]):
        out.append(
            _sse(
                {"type": "response.output_item.added", "output_index": i, "item": item},
                "response.output_item.added",
            )
        )
        if item["type"] == "message":
            for part in _halves(turn.text):
                out.append(
                    _sse(
                        {
                            "type": "response.output_text.delta",
                            "output_index": i,
                            "content_index": 0,
                            "delta": part,
                        },
                        "response.output_text.delta",
                    )
                )
        out.append(
            _sse(
                {"type": "response.output_item.done", "output_index": i, "item": item},
                "response.output_item.done",
            )
        )
    out.append(_sse({"type": "response.completed", "response": whole}, "response.completed"))
    return out


# ---- Anthropic messages ----------------------------------------------------------------


def _anthropic_blocks(turn: Turn, n: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.reasoning is not None:
        blocks.append({"type": "thinking", "thinking": turn.reasoning, "signature": "sig"})
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for i, (name, args) in enumerate(turn.calls):
        blocks.append({"type": "tool_use", "id": f"toolu_{n}_{i}", "name": name, "input": args})
    return blocks


def _anthropic_whole(turn: Turn, n: int, model: str) -> dict[str, Any]:
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(turn, n),
        "stop_reason": "tool_use" if turn.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _anthropic_stream(turn: Turn, n: int, model: str) -> list[bytes]:
    whole = _anthropic_whole(turn, n, model)
    start = {
        **whole,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    out = [_sse({"type": "message_start", "message": start}, "message_start")]
    for i, block in enumerate(whole["content"]):
        empty = {
            "thinking": {"type": "thinking", "thinking": ""},
            "text": {"type": "text", "text": ""},
            "tool_use": {**block, "input": {}},
        }[block["type"]]
        out.append(
            _sse(
                {"type": "content_block_start", "index": i, "content_block": empty},
                "content_block_start",
            )
        )
        if block["type"] == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _halves(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": "sig"})
        elif block["type"] == "text":
            deltas = [{"type": "text_delta", "text": p} for p in _halves(block["text"])]
        else:
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in _halves(json.dumps(block["input"]))
            ]
        out += [
            _sse({"type": "content_block_delta", "index": i, "delta": d}, "content_block_delta")
            for d in deltas
        ]
        out.append(_sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
    out.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
            "message_delta",
        )
    )
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out


WHOLE = {"chat": _chat_whole, "responses": _responses_whole, "anthropic": _anthropic_whole}
STREAMS = {"chat": _chat_stream, "responses": _responses_stream, "anthropic": _anthropic_stream}


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """A scripted model endpoint on 127.0.0.1 (every API, streamed or not)."""
    server = ModelServer()
    yield server
    server.stop()


@pytest.fixture
def gateway(model_server: ModelServer) -> Iterator[Gateway]:
    """A started gateway in front of the scripted endpoint, listening on the host too."""
    with Gateway(Upstream(model_server.base_url, api_key=KEY), host=True) as made:
        yield made
