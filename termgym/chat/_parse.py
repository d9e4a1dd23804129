"""A model's reply to an action: a tool call, a fenced code block, or SUBMIT (one parser).

The bundled llm agent and the chat adapter both read replies here. A reply is an assistant
message, as text or as an OpenAI-style message dict; tool calls are read first, then the
text. What is read never depends on the episode's variant or rules: the parser sees only
what the model wrote.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from termgym.agents._base import SUBMIT
from termgym.agents._reference import as_keystrokes

Source = Literal["tool_call", "code_block", "submit", "none"]
"""Where an action was read from: a tool call, a fenced block, a SUBMIT line, nowhere."""

BASH_TOOL = "bash"
KEYS_TOOL = "keys"
SUBMIT_TOOL = "submit"

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.S)
_SUBMIT_LINE = re.compile(r"^[\s*_`.!]*SUBMIT[\s*_`.!]*$", re.M)
_COMMAND_LANGS = {"bash", "sh", "shell", "console", "zsh", ""}

NO_ACTION = (
    "Your reply had no tool call, no code block and was not SUBMIT. Call the bash tool, or "
    "end your reply with exactly one ```bash block holding the next command, or reply with "
    "the single word SUBMIT when the task is complete."
)
"""The error shown when a reply holds no action (the episode goes on)."""


@dataclass(frozen=True)
class ParsedReply:
    """What a reply asks for.

    Attributes:
        action: A shell command (command mode), keystrokes (keys mode), SUBMIT, or None.
        source: Where the action was read from.
        note: What was ignored (extra blocks or tool calls), to tell the model; else "".
        error: Why there is no action (None when there is one), to show the model.
        tool_call_id: The id of the tool call the action came from, if any.
        ignored_calls: Ids of further tool calls that were not run (each needs an answer).
    """

    action: str | None
    source: Source
    note: str = ""
    error: str | None = None
    tool_call_id: str | None = None
    ignored_calls: tuple[str, ...] = ()


def tool_schemas(mode: str = "command") -> list[dict[str, Any]]:
    """The OpenAI `tools` of an episode: `bash`, `keys` (keys mode only) and `submit`."""
    bash_doc = (
        "Run a shell command in the task's persistent bash shell; returns its exit code and output."
        if mode == "command"
        else "Type a command line into the terminal, then press Enter; returns the screen."
    )
    tools = [_function(BASH_TOOL, bash_doc, {"command": "The command; it may span lines."})]
    if mode == "keys":
        tools.append(
            _function(
                KEYS_TOOL,
                "Send raw keystrokes to the terminal (for interactive programs): plain "
                "characters and <Enter>, <Tab>, <Esc>, <BS>, <Up>, <Down>, <Left>, <Right>, "
                "<C-c> (Ctrl+c), <M-x> (Alt+x), <lt> (a literal '<'). Returns the screen.",
                {"keys": "The keystrokes in that notation."},
            )
        )
    tools.append(
        _function(
            SUBMIT_TOOL, "Declare the task complete: your work is checked and the episode ends.", {}
        )
    )
    return tools


def parse_reply(content: str, mode: str = "command") -> tuple[str | None, str]:
    """Turn a model's text reply into an action.

    Returns (action, note): the action is a command, keystrokes, SUBMIT, or None when the reply
    follows no protocol; the note says what was ignored (extra blocks), else "".
    """
    parsed = parse_text(content, mode)
    return parsed.action, parsed.note


def parse_text(content: str, mode: str = "command") -> ParsedReply:
    """The action of a text reply: the first usable fenced block, else a SUBMIT line.

    Usable blocks are tagged bash, sh, shell, console, zsh or untagged, and, in keys mode,
    `keys` (sent as keystrokes; a bash block is typed and Enter pressed).
    """
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(content)]
    usable = [
        (lang, body)
        for lang, body in blocks
        if lang in _COMMAND_LANGS or (mode == "keys" and lang == "keys")
    ]
    if not usable:
        if _SUBMIT_LINE.search(content):
            return ParsedReply(SUBMIT, "submit")
        return ParsedReply(None, "none", error=NO_ACTION)
    lang, body = usable[0]
    body = body.rstrip("\n")
    if not body.strip():
        return ParsedReply(None, "none", error="Your code block was empty. " + NO_ACTION)
    note = ""
    if len(usable) > 1:
        note = f"Note: only the first of your {len(usable)} code blocks was run."
    if mode == "keys":
        return ParsedReply(body if lang == "keys" else as_keystrokes(body), "code_block", note)
    return ParsedReply(body, "code_block", note)


def parse_message(message: str | Mapping[str, Any], mode: str = "command") -> ParsedReply:
    """The action of an assistant message (text, or an OpenAI-style message dict).

    Tool calls come first: the first call of `bash`, `keys` or `submit` is the action and
    any others are not run (their ids are in `ignored_calls`, so each can be answered). A
    call with unreadable arguments, an unknown tool, or the `keys` tool in command mode is
    an error to show the model, not an exception. Without tool calls, the text is read
    with `parse_text`, once any <think>...</think> is removed.
    """
    if isinstance(message, str):
        return parse_text(_THINK.sub("", message), mode)
    calls = list(message.get("tool_calls") or [])
    if not calls:
        return parse_text(split_reasoning(message)[0], mode)
    first, rest = calls[0], tuple(_call_id(call) for call in calls[1:])
    note = ""
    if rest:
        note = f"Note: only the first of your {len(calls)} tool calls was run."
    call_id = _call_id(first)
    name, arguments, problem = _read_call(first)
    if problem is None:
        action, problem = _call_action(name, arguments, mode)
        if action is not None:
            return ParsedReply(action, "tool_call", note, None, call_id, rest)
    return ParsedReply(None, "none", note, problem, call_id, rest)


def split_reasoning(message: Any) -> tuple[str, str | None]:
    """The content and the reasoning text of a chat-completion message (object or dict).

    Reasoning comes from a `reasoning_content` or `reasoning` field (vLLM, DeepSeek, Ollama,
    OpenRouter), or from <think>...</think> inside the content, which is removed from it (a
    code block in the model's thoughts is not an action).
    """
    if isinstance(message, Mapping):
        content, extra = _text_of(message.get("content")), dict(message)
    else:
        content = message.content or ""
        extra = getattr(message, "model_extra", None) or {}
    reasoning = None
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key, getattr(message, key, None))
        if isinstance(value, str) and value.strip():
            reasoning = value
            break
    thoughts = _THINK.findall(content)
    if thoughts:
        content = _THINK.sub("", content).strip()
        inline = "\n".join(t.strip() for t in thoughts)
        reasoning = f"{reasoning}\n{inline}" if reasoning else inline
    return content, reasoning


def _read_call(call: Any) -> tuple[str, dict[str, Any], str | None]:
    function = call.get("function") if isinstance(call, Mapping) else None
    if function is None and isinstance(call, Mapping) and "name" in call:
        function = call  # the flat form {"id", "name", "arguments"} (verifiers, Anthropic-like)
    if not isinstance(function, Mapping):
        return "", {}, f"A tool call must hold a 'function' with a name; found {call!r:.200}."
    name = str(function.get("name") or "")
    raw = function.get("arguments")
    if raw is None or raw == "":
        return name, {}, None
    if isinstance(raw, Mapping):
        return name, dict(raw), None
    try:
        arguments = json.loads(raw)
    except (TypeError, ValueError) as exc:
        return name, {}, f"The arguments of your {name!r} call are not valid JSON ({exc})."
    if not isinstance(arguments, dict):
        return name, {}, f"The arguments of your {name!r} call must be a JSON object."
    return name, arguments, None


def _call_action(name: str, arguments: Mapping[str, Any], mode: str) -> tuple[str | None, str]:
    if name == SUBMIT_TOOL:
        return SUBMIT, ""
    if name == BASH_TOOL:
        command = arguments.get("command")
        if not isinstance(command, str) or not command.strip():
            return None, "The bash tool expects {'command': '<a non-empty command>'}."
        return (as_keystrokes(command) if mode == "keys" else command), ""
    if name == KEYS_TOOL:
        keys = arguments.get("keys")
        if mode != "keys":
            return None, "The keys tool is for interactive episodes; use the bash tool here."
        if not isinstance(keys, str) or not keys:
            return None, "The keys tool expects {'keys': '<keystrokes>'}."
        return keys, ""
    known = [BASH_TOOL, SUBMIT_TOOL] + ([KEYS_TOOL] if mode == "keys" else [])
    return None, f"There is no tool {name!r}; the tools are {', '.join(known)}."


def _call_id(call: Any) -> str:
    return str(call.get("id") or "") if isinstance(call, Mapping) else ""


def _text_of(content: Any) -> str:
    """The text of a message's content: a str, or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _function(name: str, description: str, params: Mapping[str, str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": "string", "description": v} for k, v in params.items()},
                "required": list(params),
                "additionalProperties": False,
            },
        },
    }
