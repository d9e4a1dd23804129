"""An episode's model calls as a termgym transcript: what the trace audit, the TUI and ATIF read.

Each call's request holds the whole conversation so far, in its API's shape; its answer is
the model's next message. Every message is read into one shape (`Said`: a role, its text,
its reasoning, its tool calls), and the transcript gets, per call, the messages no earlier
call had (the longest prefix shared with an earlier conversation is left out), then the
answer. So a conversation shows once however often it is resent, and a side conversation
(an agent's summariser, a sub-agent) shows with its own opening.

Roles and steps follow docs/agents.md: `system` (system and developer prompts), `user`,
`tool` (what the agent's tools answered), `assistant` (the model's words, its tool calls
written out as `[tool call] name(arguments)` lines, its reasoning apart); a prompt's step
is how many actions had run when the call began, an answer's that number plus one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from termgym.chat import split_reasoning
from termgym.recording import ModelCall

MODEL_APIS = ("openai-chat", "openai-responses", "anthropic-messages")


@dataclass(frozen=True)
class Said:
    """One message of a conversation, whatever its API."""

    role: str
    content: str
    reasoning: str | None = None
    calls: tuple[tuple[str, str], ...] = ()
    """The tool calls it made: (name, arguments as JSON text)."""

    @property
    def key(self) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        """What makes two messages the same one resent (reasoning is often dropped)."""
        return (self.role, self.content.strip(), self.calls)

    def text(self) -> str:
        """Its words and its tool calls written out (what the trace audit reads)."""
        lines = [self.content] if self.content else []
        lines += [f"[tool call] {name}({arguments})" for name, arguments in self.calls]
        return "\n".join(lines)


def transcript(calls: Iterable[ModelCall]) -> list[dict[str, Any]]:
    """The transcript of the model calls (agent calls and probe answers), in order."""
    entries: list[dict[str, Any]] = []
    seen: list[tuple[str, list[tuple[str, str, tuple[tuple[str, str], ...]]]]] = []
    for call in calls:
        if call.api not in MODEL_APIS or call.origin != "agent":
            continue
        prompt = prompt_of(call)
        keys = [said.key for said in prompt]
        shared = max(
            (_shared(keys, earlier) for api, earlier in seen if api == call.api), default=0
        )
        for said in prompt[shared:]:
            entries.append(_entry(said, call.actions, call))
        reply = reply_of(call)
        if reply is None:
            entries.append(_failed(call))
            continue
        entries.append({**_entry(reply, call.actions + 1, call), **_answer_facts(call)})
        seen.append((call.api, [*keys, reply.key]))
    return entries


def _shared(keys: Sequence[Any], earlier: Sequence[Any]) -> int:
    count = 0
    for mine, theirs in zip(keys, earlier, strict=False):
        if mine != theirs:
            break
        count += 1
    return count


def _entry(said: Said, step: int, call: ModelCall) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "step": step, "role": said.role, "content": said.text(), "reasoning": said.reasoning,
        "call": call.index, "api": call.api,
    }  # fmt: skip
    if said.calls:
        entry["tool_calls"] = [{"name": n, "arguments": a} for n, a in said.calls]
    return entry


def _failed(call: ModelCall) -> dict[str, Any]:
    why = call.error or f"HTTP {call.status}: {call.text[:300]}"
    return {
        "step": call.actions + 1, "role": "assistant", "content": "", "reasoning": None,
        "call": call.index, "api": call.api, "error": why,
    }  # fmt: skip


def _answer_facts(call: ModelCall) -> dict[str, Any]:
    """The answer's finish reason and token counts; the counts also under OpenAI chat's
    names (prompt_tokens, completion_tokens), which the ATIF export reads."""
    response = call.response or {}
    usage = response.get("usage")
    if isinstance(usage, Mapping):
        usage = dict(usage)
        usage.setdefault("prompt_tokens", usage.get("input_tokens"))
        usage.setdefault("completion_tokens", usage.get("output_tokens"))
    if call.api == "openai-chat":
        choices = response.get("choices") or [{}]
        reason = choices[0].get("finish_reason") if isinstance(choices[0], Mapping) else None
    elif call.api == "openai-responses":
        reason = response.get("status")
    else:
        reason = response.get("stop_reason")
    return {"finish_reason": reason, "usage": usage}


# ---- reading each API's messages ---------------------------------------------------------


def prompt_of(call: ModelCall) -> list[Said]:
    """The conversation a call sent, as `Said`s."""
    body = call.request
    if call.api == "openai-chat":
        return [said for m in _list(body.get("messages")) for said in _chat_message(m)]
    if call.api == "openai-responses":
        out = [Said("system", _text(body["instructions"]))] if body.get("instructions") else []
        given = body.get("input")
        items = [{"role": "user", "content": given}] if isinstance(given, str) else _list(given)
        return out + _response_items(items)
    if call.api == "anthropic-messages":
        out = [Said("system", _text(body["system"]))] if body.get("system") else []
        for message in _list(body.get("messages")):
            out += _anthropic_message(message)
        return out
    return []


def reply_of(call: ModelCall) -> Said | None:
    """The model's answer to a call, or None when there was none."""
    if not call.ok or call.response is None:
        return None
    body = call.response
    if call.api == "openai-chat":
        choices = _list(body.get("choices"))
        message = choices[0].get("message") if choices else None
        if not isinstance(message, Mapping):
            return None
        content, reasoning = split_reasoning(message)
        return Said("assistant", content, reasoning, _chat_calls(message))
    if call.api == "openai-responses":
        said = _response_items(_list(body.get("output")))
        merged = [s for s in said if s.role == "assistant"]
        return merged[0] if merged else Said("assistant", "")
    if call.api == "anthropic-messages":
        found = _anthropic_message({"role": "assistant", "content": body.get("content")})
        return found[0] if found else Said("assistant", "")
    return None


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _text(value: Any) -> str:
    """The text of a content value: a string, or parts / blocks with text."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        return "" if value is None else str(value)
    texts = []
    for part in value:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            kind = str(part.get("type", ""))
            if isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind in ("tool_result", "function_call_output"):
                texts.append(_text(part.get("content", part.get("output"))))
            elif "image" in kind or "file" in kind or "document" in kind:
                texts.append(f"[{kind}]")
    return "\n".join(texts)


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _chat_calls(message: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    calls = []
    for call in _list(message.get("tool_calls")):
        function = call.get("function") or {}
        calls.append((str(function.get("name", "")), _arguments(function.get("arguments", ""))))
    if isinstance(message.get("function_call"), Mapping):  # the older single call
        function = message["function_call"]
        calls.append((str(function.get("name", "")), _arguments(function.get("arguments", ""))))
    return tuple(calls)


def _chat_message(message: Mapping[str, Any]) -> list[Said]:
    role = str(message.get("role", ""))
    if role in ("system", "developer"):
        return [Said("system", _text(message.get("content")))]
    if role in ("tool", "function"):
        return [Said("tool", _text(message.get("content")))]
    if role == "assistant":
        content, reasoning = split_reasoning(message)
        return [Said("assistant", content, reasoning, _chat_calls(message))]
    return [Said("user", _text(message.get("content")))]


_ASSISTANT_ITEMS = ("reasoning", "function_call", "custom_tool_call", "local_shell_call")
_OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def _response_items(items: Sequence[Mapping[str, Any]]) -> list[Said]:
    """Responses API items as messages: a run of the model's items (its reasoning, its
    message, its calls) is one assistant message."""
    out: list[Said] = []
    words: list[str] = []
    thoughts: list[str] = []
    calls: list[tuple[str, str]] = []

    def close_turn() -> None:
        if words or thoughts or calls:
            out.append(
                Said("assistant", "\n".join(words), "\n".join(thoughts) or None, tuple(calls))
            )
            words.clear()
            thoughts.clear()
            calls.clear()

    for item in items:
        kind, role = str(item.get("type", "message")), str(item.get("role", ""))
        if kind == "reasoning":
            thoughts.append(_text(item.get("summary")) or _text(item.get("content")))
        elif kind == "function_call":
            calls.append((str(item.get("name", "")), _arguments(item.get("arguments", ""))))
        elif kind == "custom_tool_call":
            calls.append((str(item.get("name", "")), _arguments(item.get("input", ""))))
        elif kind == "local_shell_call":
            calls.append(("local_shell", _arguments(item.get("action", {}))))
        elif kind == "message" and role == "assistant":
            words.append(_text(item.get("content")))
        elif kind in _OUTPUT_ITEMS:
            close_turn()
            out.append(Said("tool", _text(item.get("output"))))
        elif kind == "message" or role:
            close_turn()
            mapped = "system" if role in ("system", "developer") else "user"
            out.append(Said(mapped, _text(item.get("content"))))
    close_turn()
    return out


def _anthropic_message(message: Mapping[str, Any]) -> list[Said]:
    role, content = str(message.get("role", "user")), message.get("content")
    if isinstance(content, str):
        return [Said("assistant" if role == "assistant" else "user", content)]
    blocks = _list(content)
    if role == "assistant":
        words = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
        thoughts = [str(b.get("thinking", "")) for b in blocks if b.get("type") == "thinking"]
        calls = tuple(
            (str(b.get("name", "")), _arguments(b.get("input", {})))
            for b in blocks
            if b.get("type") in ("tool_use", "server_tool_use")
        )
        return [Said("assistant", "\n".join(words), "\n".join(thoughts) or None, calls)]
    results = [b for b in blocks if b.get("type") == "tool_result"]
    rest = [b for b in blocks if b.get("type") != "tool_result"]
    out = [Said("tool", _text(b.get("content"))) for b in results]
    if rest or not results:
        out.append(Said("user", _text(rest)))
    return out
