"""A model's reply to an action: a tool call, a fenced code block, or SUBMIT (one parser).

The bundled llm agent and the chat adapter both read replies here. A reply is an assistant
message, as text or as an OpenAI-style message dict. Native tool calls are read first, then
the text: tool calls written as text (`<tool_call>{...}</tool_call>`, as Hermes and Qwen
chat templates make open models write them, and Qwen3-Coder's `<function=...>` form, with or
without the `<tool_call>` around it), then a fenced block, then a keyword line
(SUBMIT). What is read never depends on the episode's variant or rules: the parser sees
only what the model wrote.

The actions a model can take are two tables: `TOOLS` (a name, the schema shown to the
model, how a call's arguments become an action) and `KEYWORDS` (a line that is an action on
its own). A new action is one entry in each: REPORT_CONFLICT is the `report_conflict` tool
and the line `REPORT_CONFLICT: <reason>`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from termgym._actions import REPORT_CONFLICT, SUBMIT, as_keystrokes, report_conflict

Source = Literal["tool_call", "text_tool_call", "code_block", "keyword", "none"]
"""Where an action was read from: a native tool call, a tool call written as text
(`<tool_call>`), a fenced block, a keyword line (SUBMIT), nowhere."""

BASH_TOOL = "bash"
KEYS_TOOL = "keys"
SUBMIT_TOOL = "submit"
REPORT_CONFLICT_TOOL = "report_conflict"

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.S)
_TEXT_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_XML_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|$)", re.S)
_XML_PARAMETER = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?</parameter>", re.S)
_COMMAND_LANGS = {"bash", "sh", "shell", "console", "zsh", ""}

Reader = Callable[[Mapping[str, Any], str], tuple[str | None, str]]
"""A tool call's arguments and the episode's mode -> (action, or None and the error)."""


@dataclass(frozen=True)
class Tool:
    """One tool a model may call: what it is shown, and how a call becomes an action.

    Attributes:
        name: The function name.
        describe: The description shown to the model, per mode ("command" or "keys").
        params: Parameter name -> description (all strings, all required).
        read: Turns a call's arguments into the action, or None and what was wrong.
        modes: The modes it is offered in.
        elsewhere: What a call in another mode is told.
    """

    name: str
    describe: Callable[[str], str]
    params: Mapping[str, str]
    read: Reader
    modes: tuple[str, ...] = ("command", "keys")
    elsewhere: str = ""

    def schema(self, mode: str) -> dict[str, Any]:
        """The OpenAI `tools` entry of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.describe(mode),
                "parameters": {
                    "type": "object",
                    "properties": {
                        k: {"type": "string", "description": v} for k, v in self.params.items()
                    },
                    "required": list(self.params),
                    "additionalProperties": False,
                },
            },
        }


@dataclass(frozen=True)
class Keyword:
    """A line that is an action on its own (SUBMIT), in a reply with no usable block.

    `build`: makes the action from the line's match (an action that carries text, such as
    REPORT_CONFLICT's reason); None: the action is `action` as it is.
    """

    action: str
    line: re.Pattern[str] = field(compare=False)
    build: Callable[[re.Match[str]], str] | None = field(default=None, compare=False)

    def read(self, match: re.Match[str]) -> str:
        """The action a matching line stands for."""
        return self.build(match) if self.build is not None else self.action


def _read_bash(arguments: Mapping[str, Any], mode: str) -> tuple[str | None, str]:
    command = arguments.get("command")
    if not isinstance(command, str) or not command.strip():
        return None, "The bash tool expects {'command': '<a non-empty command>'}."
    return (as_keystrokes(command) if mode == "keys" else command), ""


def _read_keys(arguments: Mapping[str, Any], mode: str) -> tuple[str | None, str]:
    keys = arguments.get("keys")
    if not isinstance(keys, str) or not keys:
        return None, "The keys tool expects {'keys': '<keystrokes>'}."
    return keys, ""


def _read_conflict(arguments: Mapping[str, Any], mode: str) -> tuple[str | None, str]:
    reason = arguments.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return None, "The report_conflict tool expects {'reason': '<what contradicts what>'}."
    return report_conflict(reason), ""


def _bash_doc(mode: str) -> str:
    if mode == "keys":
        return "Type a command line into the terminal, then press Enter; returns the screen."
    return (
        "Run a shell command in the task's persistent bash shell; returns its exit code and output."
    )


TOOLS: tuple[Tool, ...] = (
    Tool(BASH_TOOL, _bash_doc, {"command": "The command; it may span lines."}, _read_bash),
    Tool(
        KEYS_TOOL,
        lambda mode: (
            "Send raw keystrokes to the terminal (for interactive programs): plain "
            "characters and <Enter>, <Tab>, <Esc>, <BS>, <Up>, <Down>, <Left>, <Right>, "
            "<C-c> (Ctrl+c), <M-x> (Alt+x), <lt> (a literal '<'). Returns the screen."
        ),
        {"keys": "The keystrokes in that notation."},
        _read_keys,
        modes=("keys",),
        elsewhere="The keys tool is for interactive episodes; use the bash tool here.",
    ),
    Tool(
        SUBMIT_TOOL,
        lambda mode: "Declare the task complete: your work is checked and the episode ends.",
        {},
        lambda arguments, mode: (SUBMIT, ""),
    ),
    Tool(
        REPORT_CONFLICT_TOOL,
        lambda mode: (
            "Report that the task cannot be done as stated because its instructions, files or "
            "tests contradict each other; say what contradicts what. The episode ends."
        ),
        {"reason": "What contradicts what, and where each is stated."},
        _read_conflict,
    ),
)
"""Every tool, in the order offered."""

KEYWORDS: tuple[Keyword, ...] = (
    Keyword(SUBMIT, re.compile(r"^[\s*_`.!]*SUBMIT[\s*_`.!]*$", re.M)),
    Keyword(
        REPORT_CONFLICT,
        re.compile(r"^[\s*_`]*REPORT[_ ]CONFLICT[\s*_`]*(?::[ \t]*(.*))?$", re.M),
        lambda match: report_conflict((match.group(1) or "").strip(" *_`")),
    ),
)
"""Every keyword line, in the order tried."""

NO_ACTION = (
    "Your reply had no tool call, no code block and was not SUBMIT. Call the bash tool, or "
    "end your reply with exactly one ```bash block holding the next command, or reply with "
    "the single word SUBMIT when the task is complete."
)
"""The error shown when a reply holds no action and the model was offered tools."""

NO_ACTION_TEXT = (
    "Your reply had no code block and was not SUBMIT. End your reply with exactly one "
    "```bash block holding the next command, or reply with the single word SUBMIT when the "
    "task is complete."
)
"""The same error where no tools were offered (the model is never told to call one)."""


@dataclass(frozen=True)
class ParsedReply:
    """What a reply asks for.

    Attributes:
        action: A shell command (command mode), keystrokes (keys mode), SUBMIT, or None.
        source: Where the action was read from.
        note: What was ignored (extra blocks or tool calls), to tell the model; else "".
        error: Why there is no action (None when there is one), to show the model.
        tool_call_id: The id of the native tool call the action came from, if any.
        ignored_calls: Ids of further native tool calls that were not run (each needs an
            answer).
        call: The call as read, {"name", "arguments"}, for a tool call (native or text).
    """

    action: str | None
    source: Source
    note: str = ""
    error: str | None = None
    tool_call_id: str | None = None
    ignored_calls: tuple[str, ...] = ()
    call: Mapping[str, Any] | None = None


def tool_schemas(mode: str = "command") -> list[dict[str, Any]]:
    """The OpenAI `tools` of an episode: `bash`, `keys` (keys mode only), `submit` and
    `report_conflict`."""
    return [tool.schema(mode) for tool in TOOLS if mode in tool.modes]


def no_action(tools: bool = True) -> str:
    """The error for a reply without an action; `tools`: whether tools were offered."""
    return NO_ACTION if tools else NO_ACTION_TEXT


def parse_reply(content: str, mode: str = "command") -> tuple[str | None, str]:
    """Turn a model's text reply into an action.

    Returns (action, note): the action is a command, keystrokes, SUBMIT, or None when the reply
    follows no protocol; the note says what was ignored (extra blocks), else "".
    """
    parsed = parse_text(content, mode)
    return parsed.action, parsed.note


def parse_text(content: str, mode: str = "command", *, tools: bool = True) -> ParsedReply:
    """The action of a text reply: a `<tool_call>`, else the first usable fenced block,
    else a keyword line (SUBMIT).

    A `<tool_call>` holds JSON (`{"name": ..., "arguments": {...}}`, Hermes and Qwen 2.5)
    or the XML form of Qwen3-Coder (`<function=bash><parameter=command>...`), which is
    also read bare, without the `<tool_call>` around it, as Qwen3-Coder often writes it
    (outside a fenced block: a `<function=` quoted in a block is not a call). Usable blocks
    are tagged bash, sh, shell, console, zsh or untagged, and, in keys mode, `keys` (sent as
    keystrokes; a bash block is typed and Enter pressed). `tools` says whether the model was
    offered tools, which decides how a reply without an action is answered.
    """
    written = _TEXT_CALL.findall(content)
    if not written:  # Qwen3-Coder often drops the <tool_call> around its XML form
        written = [m.group(0) for m in _XML_FUNCTION.finditer(_FENCE.sub("", content))]
    if written:
        return _text_calls(written, mode)
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(content)]
    usable = [
        (lang, body)
        for lang, body in blocks
        if lang in _COMMAND_LANGS or (mode == "keys" and lang == "keys")
    ]
    if not usable:
        for keyword in KEYWORDS:
            found = keyword.line.search(content)
            if found:
                return ParsedReply(keyword.read(found), "keyword")
        return ParsedReply(None, "none", error=no_action(tools))
    lang, body = usable[0]
    body = body.rstrip("\n")
    if not body.strip():
        return ParsedReply(None, "none", error="Your code block was empty. " + no_action(tools))
    note = ""
    if len(usable) > 1:
        note = f"Note: only the first of your {len(usable)} code blocks was run."
    if mode == "keys":
        return ParsedReply(body if lang == "keys" else as_keystrokes(body), "code_block", note)
    return ParsedReply(body, "code_block", note)


def parse_message(
    message: str | Mapping[str, Any], mode: str = "command", *, tools: bool = True
) -> ParsedReply:
    """The action of an assistant message (text, or an OpenAI-style message dict).

    Native tool calls come first: the first call of a known tool is the action and any
    others are not run (their ids are in `ignored_calls`, so each can be answered). A call
    with unreadable arguments, an unknown tool, or the `keys` tool in command mode is an
    error to show the model, not an exception. Without tool calls, the text is read with
    `parse_text`, once any <think>...</think> is removed. `tools`: whether the model was
    offered tools (a model that was not is never told to call one).
    """
    if isinstance(message, str):
        return parse_text(_THINK.sub("", message), mode, tools=tools)
    if not isinstance(message, Mapping):
        raise TypeError(
            "parse_message reads the model's text or an assistant message dict (ChatEnv.step "
            f"also takes an OpenAI message object); got {type(message).__name__}"
        )
    calls = list(message.get("tool_calls") or [])
    if not calls:
        return parse_text(split_reasoning(message)[0], mode, tools=tools)
    first, rest = calls[0], tuple(_call_id(call) for call in calls[1:])
    note = ""
    if rest:
        note = f"Note: only the first of your {len(calls)} tool calls was run."
    parsed = _one_call(first, mode, "tool_call")
    return ParsedReply(
        parsed.action, parsed.source, note, parsed.error, _call_id(first), rest, parsed.call
    )


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


def _text_calls(written: Sequence[str], mode: str) -> ParsedReply:
    """The first tool call written as text; the others are not run."""
    note = ""
    if len(written) > 1:
        note = f"Note: only the first of your {len(written)} tool calls was run."
    parsed = _one_call(_written_call(written[0]), mode, "text_tool_call")
    return ParsedReply(parsed.action, parsed.source, note, parsed.error, call=parsed.call)


def _written_call(body: str) -> Any:
    """A `<tool_call>` body as a call {"name", "arguments"} (or what it held, to report)."""
    xml = _XML_FUNCTION.search(body)
    if xml is not None:
        params = {k: v for k, v in _XML_PARAMETER.findall(xml.group(2))}
        return {"name": xml.group(1), "arguments": params}
    try:
        data = json.loads(body)
    except ValueError as exc:
        return {"name": "", "problem": f"Your <tool_call> does not hold valid JSON ({exc})."}
    if isinstance(data, Mapping) and "arguments" not in data and "parameters" in data:
        data = {**data, "arguments": data["parameters"]}  # Llama 3's JSON form
    return data


def _one_call(call: Any, mode: str, source: Source) -> ParsedReply:
    name, arguments, problem = _read_call(call)
    read = {"name": name, "arguments": arguments} if name else None
    if problem is None:
        action, problem = _call_action(name, arguments, mode)
        if action is not None:
            return ParsedReply(action, source, call=read)
    return ParsedReply(None, "none", error=problem, call=read)


def _read_call(call: Any) -> tuple[str, dict[str, Any], str | None]:
    if isinstance(call, Mapping) and call.get("problem"):
        return "", {}, str(call["problem"])
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
    tool = next((t for t in TOOLS if t.name == name), None)
    if tool is not None and mode in tool.modes:
        return tool.read(arguments, mode)
    if tool is not None and tool.elsewhere:
        return None, tool.elsewhere
    known = [t.name for t in TOOLS if mode in t.modes]
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
