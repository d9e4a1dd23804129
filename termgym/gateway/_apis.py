"""The model APIs the gateway forwards: which a request is of, and a stream's events as one answer.

OpenAI chat completions (`.../chat/completions`), OpenAI responses (`.../responses`) and
Anthropic messages (`.../messages`) are model calls; a model list (`GET .../models`) and
Anthropic's token count (`.../messages/count_tokens`) are forwarded too ("other"). Nothing
else is: the gateway is not a proxy to the upstream's whole site.

A streamed answer (server-sent events) is passed to the agent as it arrives and read on
the way into the message it makes, which is what the recording keeps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from termgym.recording import Api

_ROUTES: tuple[tuple[str, re.Pattern[str], Api], ...] = (
    ("POST", re.compile(r"(?:/v1)?/chat/completions"), "openai-chat"),
    ("POST", re.compile(r"(?:/v1)?/responses"), "openai-responses"),
    ("POST", re.compile(r"(?:/v1)?/messages"), "anthropic-messages"),
    ("POST", re.compile(r"(?:/v1)?/messages/count_tokens"), "other"),
    ("GET", re.compile(r"(?:/v1)?/models(?:/\w[\w.:@+-]*)?"), "other"),
)

FORWARDED = (
    "POST .../chat/completions, .../responses, .../messages, .../messages/count_tokens; "
    "GET .../models"
)
"""What the gateway forwards, as its refusals say."""


def api_of(method: str, path: str, base_path: str) -> Api | None:
    """The API of a request for `path` (without its query), below the upstream's base path
    `base_path` ("" or "/v1" ...); None when the gateway does not forward it."""
    if base_path and not (path == base_path or path.startswith(base_path + "/")):
        return None
    rest = path[len(base_path) :]
    for wanted, pattern, api in _ROUTES:
        if method == wanted and pattern.fullmatch(rest):
            return api
    return None


def events(buffer: bytearray) -> list[tuple[str, str]]:
    """The whole server-sent events in `buffer` as (event name, data), taken out of it; a
    partial event stays for the next bytes."""
    found: list[tuple[str, str]] = []
    while True:
        text = bytes(buffer)
        cut = min((i for i in (text.find(b"\n\n"), text.find(b"\r\n\r\n")) if i >= 0), default=-1)
        if cut < 0:
            return found
        size = 4 if text[cut : cut + 4] == b"\r\n\r\n" else 2
        block = text[:cut].decode("utf-8", "replace")
        del buffer[: cut + size]
        name, data = "", []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            found.append((name, "\n".join(data)))


ENDS = ("response.completed", "response.failed", "response.incomplete", "message_stop")
"""Events after which an API's stream says nothing more (chat ends with `data: [DONE]`)."""


class StreamReader:
    """Reads a stream's events into the answer they make, for one API."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.buffer = bytearray()
        self.answer: dict[str, Any] = {}
        self._choices: dict[int, dict[str, Any]] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._partial_json: dict[int, str] = {}
        self._items: list[Any] = []
        self.events = 0
        self.ended = False
        """The API's last event came ([DONE], response.completed, message_stop ...)."""

    def feed(self, chunk: bytes) -> None:
        """Take in the next bytes of the stream."""
        self.buffer += chunk
        for name, data in events(self.buffer):
            if data.strip() == "[DONE]":
                self.ended = True
                continue
            try:
                event = json.loads(data)
            except ValueError:
                continue
            if isinstance(event, dict):
                self.events += 1
                self._take(name or str(event.get("type", "")), event)

    def _take(self, name: str, event: dict[str, Any]) -> None:
        if name in ENDS:
            self.ended = True
        if self.api == "openai-chat":
            self._chat(event)
        elif self.api == "openai-responses":
            self._responses(name, event)
        elif self.api == "anthropic-messages":
            self._anthropic(name, event)

    def _chat(self, event: dict[str, Any]) -> None:
        for key in ("id", "model", "created", "system_fingerprint"):
            if key in event:
                self.answer[key] = event[key]
        if event.get("usage"):
            self.answer["usage"] = event["usage"]
        for choice in event.get("choices") or ():
            index = int(choice.get("index", 0))
            mine = self._choices.setdefault(
                index, {"index": index, "message": {"role": "assistant"}}
            )
            message, delta = mine["message"], choice.get("delta") or {}
            for key in ("content", "reasoning_content", "reasoning", "refusal"):
                if isinstance(delta.get(key), str):
                    message[key] = message.get(key, "") + delta[key]
            for call in delta.get("tool_calls") or ():
                calls = message.setdefault("tool_calls", [])
                at = int(call.get("index", len(calls)))
                while len(calls) <= at:
                    calls.append(
                        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                    )
                into, function = calls[at], call.get("function") or {}
                if call.get("id"):
                    into["id"] = call["id"]
                into["function"]["name"] += function.get("name") or ""
                into["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                mine["finish_reason"] = choice["finish_reason"]
        self.answer["object"] = "chat.completion"
        self.answer["choices"] = [self._choices[i] for i in sorted(self._choices)]

    def _responses(self, name: str, event: dict[str, Any]) -> None:
        response = event.get("response")
        if name in ("response.completed", "response.failed", "response.incomplete") and isinstance(
            response, dict
        ):
            self.answer = dict(response)
            if not self.answer.get("output") and self._items:
                self.answer["output"] = list(self._items)
        elif name in ("response.created", "response.in_progress") and isinstance(response, dict):
            self.answer = {**response, "output": list(self._items)}
        elif name == "response.output_item.done" and isinstance(event.get("item"), dict):
            self._items.append(event["item"])
            self.answer["output"] = list(self._items)

    def _anthropic(self, name: str, event: dict[str, Any]) -> None:
        if name == "message_start" and isinstance(event.get("message"), dict):
            self.answer = dict(event["message"])
            self.answer["content"] = []
        elif name == "content_block_start":
            self._blocks[int(event.get("index", 0))] = dict(event.get("content_block") or {})
        elif name == "content_block_delta":
            index, delta = int(event.get("index", 0)), event.get("delta") or {}
            block = self._blocks.setdefault(index, {})
            kind = delta.get("type")
            if kind == "text_delta":
                block["text"] = block.get("text", "") + str(delta.get("text", ""))
            elif kind == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
            elif kind == "signature_delta":
                block["signature"] = block.get("signature", "") + str(delta.get("signature", ""))
            elif kind == "input_json_delta":
                self._partial_json[index] = self._partial_json.get(index, "") + str(
                    delta.get("partial_json", "")
                )
        elif name == "message_delta":
            self.answer.update(event.get("delta") or {})
            if event.get("usage"):
                self.answer["usage"] = {**(self.answer.get("usage") or {}), **event["usage"]}
        if name in ("content_block_stop", "message_delta", "message_stop"):
            self.answer["content"] = [self._block(i) for i in sorted(self._blocks)]

    def _block(self, index: int) -> dict[str, Any]:
        block = dict(self._blocks[index])
        if index in self._partial_json:
            try:
                block["input"] = json.loads(self._partial_json[index] or "{}")
            except ValueError:
                block["input"] = {"_partial_json": self._partial_json[index]}
        return block

    def result(self) -> Mapping[str, Any] | None:
        """The answer the events made so far (None if none was read)."""
        return self.answer if self.events else None
