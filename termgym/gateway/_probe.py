"""The disclosure probe for any agent whose calls went through the gateway, after its episode.

The last call of the episode's main conversation is sent again, in its own API, with the
model's answer appended, every tool call of that answer answered with "the episode is
over", and then the question: asked as a user message (mode "ask"), or prefilled as the
start of the model's own next message (mode "prefill", `termgym.chat`'s styles on OpenAI
chat; Anthropic messages continue a trailing assistant message themselves; OpenAI's
responses API continues none and is refused). The request keeps the call's model, tools
and sampling, asks for no tool call and no stream.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from termgym.chat import (
    EPISODE_ENDED,
    PROBE_QUESTION,
    continuation,
    prefill_request,
    prefill_text,
    split_reasoning,
)
from termgym.errors import AgentError
from termgym.gateway._transcript import MODEL_APIS, prompt_of, reply_of
from termgym.recording import ModelCall


def last_conversation(calls: Sequence[ModelCall]) -> ModelCall | None:
    """The agent's last answered call of its main conversation: the one that opened like
    its longest call (a summariser's or a sub-agent's side call is not the episode)."""
    answered = [c for c in calls if c.origin == "agent" and c.api in MODEL_APIS and c.ok]
    if not answered:
        return None
    longest = max(answered, key=lambda c: len(prompt_of(c)))
    opening = [s.key for s in prompt_of(longest)[:2]]
    same = [
        c for c in answered
        if c.api == longest.api and [s.key for s in prompt_of(c)[:2]] == opening
    ]  # fmt: skip
    return same[-1]


def probe_request(
    call: ModelCall, mode: str, style: str | None, into: str
) -> tuple[dict[str, Any], str | None]:
    """The probe's request body after `call`, and the prefilled text (None when asked).

    Raises:
        AgentError: a prefill the call's API cannot continue.
    """
    body = copy.deepcopy(dict(call.request))
    for key in ("stream", "stream_options"):
        body.pop(key, None)
    text = prefill_text(into) if mode == "prefill" else None
    if call.api == "openai-chat":
        return _chat(body, call, style, text), text
    if call.api == "openai-responses":
        if text is not None:
            raise AgentError(
                "gateway probe: OpenAI's responses API continues no partial assistant "
                "message; probe this agent with mode='ask'"
            )
        return _responses(body, call), None
    if text is not None and style not in (None, "trailing"):
        raise AgentError(
            f"gateway probe: Anthropic's messages API continues a trailing assistant message "
            f"itself; expected probe_prefill 'trailing' (or none), got {style!r}"
        )
    return _anthropic(body, call, text), text


def _chat(
    body: dict[str, Any], call: ModelCall, style: str | None, text: str | None
) -> dict[str, Any]:
    answer = dict(_chat_message(call))
    messages = [*body.get("messages", []), answer]
    messages += [
        {"role": "tool", "tool_call_id": c.get("id", ""), "content": EPISODE_ENDED}
        for c in answer.get("tool_calls") or ()
    ]
    if body.get("tools"):
        body["tool_choice"] = "none"
    if text is None:
        body["messages"] = [*messages, {"role": "user", "content": PROBE_QUESTION}]
        return body
    if style is None:
        raise AgentError(
            "gateway probe: probe_mode=prefill on OpenAI chat needs probe_prefill, how the "
            "endpoint continues a partial assistant message (continue_final_message, prefix "
            "or trailing)"
        )
    if messages[-1].get("role") == "assistant":
        messages.append({"role": "user", "content": EPISODE_ENDED})
    body["messages"], extra = prefill_request(messages, style, text)
    body.update(extra)
    return body


def _chat_message(call: ModelCall) -> Mapping[str, Any]:
    """The answer as the next request carries it: content and tool calls, no reasoning."""
    choices = (call.response or {}).get("choices") or [{}]
    message = choices[0].get("message") or {}
    content, _ = split_reasoning(message)
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


def _responses(body: dict[str, Any], call: ModelCall) -> dict[str, Any]:
    response = call.response or {}
    output = [dict(item) for item in response.get("output") or () if isinstance(item, Mapping)]
    answers = [
        {
            "type": f"{item['type']}_output",
            "call_id": item.get("call_id", ""),
            "output": EPISODE_ENDED,
        }
        for item in output
        if item.get("type") in ("function_call", "custom_tool_call")
    ]
    question = {"role": "user", "content": [{"type": "input_text", "text": PROBE_QUESTION}]}
    if body.get("previous_response_id") and response.get("id"):
        body["previous_response_id"] = response["id"]
        body["input"] = [*answers, question]
    else:
        given = body.get("input")
        earlier = (
            [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
        )
        body["input"] = [*earlier, *output, *answers, question]
    if body.get("tools"):
        body["tool_choice"] = "none"
    return body


def _anthropic(body: dict[str, Any], call: ModelCall, text: str | None) -> dict[str, Any]:
    content = [
        dict(b) for b in (call.response or {}).get("content") or () if isinstance(b, Mapping)
    ]
    uses = [b for b in content if b.get("type") == "tool_use"]
    messages = [*body.get("messages", []), {"role": "assistant", "content": content}]
    after: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": b.get("id", ""), "content": EPISODE_ENDED}
        for b in uses
    ]
    after.append({"type": "text", "text": EPISODE_ENDED if text is not None else PROBE_QUESTION})
    messages.append({"role": "user", "content": after})
    if text is not None:
        messages.append({"role": "assistant", "content": text})
    body["messages"] = messages
    if body.get("tools"):
        body["tool_choice"] = {"type": "none"}
    return body


def probe_answer(call: ModelCall, prefilled: str | None) -> tuple[str, str | None]:
    """The model's answer to the probe as (words, reasoning), the prefilled text taken off."""
    reply = reply_of(call)
    if reply is None:
        raise AgentError(
            f"gateway probe: the endpoint answered {call.status or 'nothing'}"
            f"{': ' + call.error if call.error else ''} {call.text[:300]}".rstrip()
        )
    content, reasoning = reply.content, reply.reasoning
    if prefilled is not None:
        content, more = continuation(content, prefilled)
        if more:
            reasoning = f"{more}\n{reasoning}" if reasoning else more
    return content, reasoning
