"""The llm agent: any OpenAI-compatible chat-completions endpoint, one action per turn.

Two protocols, one reply parser (`termgym.chat.parse_message`, the chat adapter's):
"text" (the default) offers no tools and asks for a fenced block or SUBMIT; "tools" sends
the bash/keys/submit tools and answers each call with a `tool` message. Either reads every
form a model may answer with: native tool calls, `<tool_call>` text, fenced blocks, SUBMIT.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Literal

from termgym._actions import ends_episode
from termgym.agents._base import EpisodeContext
from termgym.chat import (
    EPISODE_ENDED,
    PROBE_QUESTION,
    ParsedReply,
    check_probe_options,
    continuation,
    parse_message,
    parse_reply,
    prefill_request,
    prefill_text,
    split_reasoning,
    system_prompt,
    tool_schemas,
    truncate_middle,
)
from termgym.errors import AgentError

__all__ = ["PROBE_QUESTION", "PROTOCOLS", "LLMAgent", "parse_reply", "truncate_middle"]

Protocol = Literal["text", "tools"]
PROTOCOLS: tuple[Protocol, ...] = ("text", "tools")
"""How actions are asked for: fenced blocks and SUBMIT, or tool calls (tools sent)."""

NOT_RUN = "Not run: one action per turn, and only the first tool call of a reply runs."
ENDED = EPISODE_ENDED
LAST_STEP = "This was your last step: the command runs and the episode ends."


class LLMAgent:
    """An agent backed by an OpenAI-compatible chat-completions endpoint (see docs/agents.md).

    Args:
        model: Model name; defaults to $TERMGYM_LLM_MODEL.
        base_url: Endpoint, e.g. http://localhost:8000/v1 (vLLM) or http://localhost:11434/v1
            (Ollama); defaults to $TERMGYM_LLM_BASE_URL, then $OPENAI_BASE_URL, then OpenAI's.
        api_key: Defaults to $TERMGYM_LLM_KEY, then $OPENAI_API_KEY ("EMPTY" for a custom
            base_url that needs none).
        protocol: "text" (no tools sent: a fenced block or SUBMIT per reply) or "tools" (the
            bash/keys/submit tools are sent, each call answered by a `tool` message). Both
            read tool calls, `<tool_call>` text, fenced blocks and SUBMIT alike.
        temperature: Sampling temperature (None: not sent, for models that refuse one).
        max_tokens: Cap on tokens per reply (None: the endpoint's default).
        timeout: Seconds one request may take.
        max_retries: Retries of the client library on connection errors, 408/409/429 and 5xx.
        max_output_chars: Characters of a command's output shown to the model (head and tail).
        max_history_chars: Once the conversation grows past this, the oldest outputs are elided.
        format_retries: Replies without an action tolerated in a row.
        probe: After SUBMIT, ask the model which instructions and rules it followed.
        probe_mode: "ask" (a user message) or "prefill" (the question as the start of the
            model's own answer; termgym/chat/_probe.py, docs/agents.md).
        probe_prefill: With prefill, how the endpoint continues a partial assistant message:
            "continue_final_message" (vLLM, SGLang), "prefix" (DeepSeek /beta, Mistral) or
            "trailing" (OpenRouter, llama-server).
        probe_prefill_into: "answer", or "reasoning" (the prefill opens a <think> block).
        extra_body: Extra JSON fields for the request (e.g. vLLM's chat_template_kwargs).
    """

    name = "llm"
    privileged = False

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        max_output_chars: int = 8000,
        max_history_chars: int = 200_000,
        format_retries: int = 2,
        probe: bool = False,
        extra_body: Mapping[str, Any] | None = None,
        probe_mode: str = "ask",
        probe_prefill: str | None = None,
        probe_prefill_into: str = "answer",
        protocol: str = "text",
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise AgentError(
                "the llm agent needs the openai package: pip install 'termgym[llm]'"
            ) from exc
        if protocol not in PROTOCOLS:
            raise AgentError(
                f"llm: protocol: expected one of {', '.join(PROTOCOLS)}, got {protocol!r}"
            )
        for option, value, least in (
            ("timeout", timeout, None),
            ("max_retries", max_retries, 0),
            ("max_output_chars", max_output_chars, 1),
            ("max_history_chars", max_history_chars, 1),
            ("format_retries", format_retries, 0),
            ("max_tokens", 1 if max_tokens is None else max_tokens, 1),
        ):
            if least is None and not (isinstance(value, int | float) and value > 0):
                raise AgentError(f"llm: {option}: expected seconds > 0, got {value!r}")
            if least is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < least
            ):
                raise AgentError(f"llm: {option}: expected an int >= {least}, got {value!r}")
        self.model = model or os.environ.get("TERMGYM_LLM_MODEL", "")
        if not self.model:
            raise AgentError("llm: expected a model name (option model or $TERMGYM_LLM_MODEL)")
        self.base_url = (
            base_url or os.environ.get("TERMGYM_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        )
        key = api_key or os.environ.get("TERMGYM_LLM_KEY") or os.environ.get("OPENAI_API_KEY")
        if not key and not self.base_url:
            raise AgentError(
                "llm: expected an API key (option api_key, $TERMGYM_LLM_KEY or $OPENAI_API_KEY) "
                "or a base_url of an endpoint that needs none"
            )
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=key or "EMPTY", timeout=timeout, max_retries=max_retries
        )
        self.protocol = protocol
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_output_chars = max_output_chars
        self.max_history_chars = max_history_chars
        self.format_retries = format_retries
        self.probe_enabled = probe
        check_probe_options(probe_mode, probe_prefill, probe_prefill_into, self.base_url)
        self.probe_mode = probe_mode
        self.probe_prefill = probe_prefill
        self.probe_prefill_into = probe_prefill_into
        self.extra_body = dict(extra_body or {})
        self._context: EpisodeContext | None = None
        self._messages: list[dict[str, Any]] = []
        self._transcript: list[dict[str, Any]] = []
        self._step = 0
        self._note = ""
        self._probed = False
        self._owed: ParsedReply | None = None
        """The last reply, whose tool calls (if any) the next message must answer."""

    @property
    def offers_tools(self) -> bool:
        """Whether requests carry the bash/keys/submit tools."""
        return self.protocol == "tools"

    def reset(self, context: EpisodeContext) -> None:
        """Start a conversation: the system prompt; the instruction comes with the first act."""
        self._context = context
        self._messages = []
        self._transcript = []
        self._step = 0
        self._note = ""
        self._probed = False
        self._owed = None
        template = system_prompt(context.mode, tools=self.offers_tools)
        self._add("system", template.format(max_steps=context.max_steps))

    def act(self, observation: Mapping[str, Any]) -> str:
        """Show the observation to the model and return the action it answers with."""
        context = self._require_context()
        self._answer(self._render(observation, first=self._step == 0))
        for _attempt in range(self.format_retries + 1):
            parsed = self._ask()
            if parsed.action is not None:
                break
            self._answer("\n\n".join(part for part in (parsed.note, parsed.error) if part))
        else:
            calls = " nor a usable tool call" if self.offers_tools else ""
            raise AgentError(
                f"llm: model {self.model!r} answered {self.format_retries + 1} times in a row "
                f"with neither a code block nor SUBMIT{calls} (last: {parsed.error})"
            )
        self._note = parsed.note
        action = parsed.action
        assert action is not None
        if ends_episode(action):  # SUBMIT, or a reported conflict
            if self.probe_enabled:
                self.probe()
            return action
        self._step += 1
        if self.probe_enabled and self._step >= context.max_steps:
            self.probe()  # the last allowed step: the episode ends without another turn
        return action

    def probe(self) -> str | None:
        """Ask the disclosure question once per episode; the answer goes in the transcript."""
        if self._probed or self._context is None:
            return None
        self._probed = True
        if self._owed is not None and self._owed.tool_call_id is not None:
            ended = ends_episode(self._owed.action or "")
            last = not ended and self._step >= self._context.max_steps
            self._answer(LAST_STEP if last else ENDED)  # the API wants every call answered
        if self.probe_mode == "prefill":
            return self._prefilled_probe()
        self._add("probe_question", PROBE_QUESTION)
        try:
            return _text(self._complete(role="probe", entry={"probe_mode": "ask"}))
        except AgentError as exc:
            self._transcript.append(
                {
                    "step": self._step + 1,
                    "role": "probe",
                    "content": "",
                    "reasoning": None,
                    "error": str(exc),
                }
            )
            return None

    def _prefilled_probe(self) -> str:
        """The probe with its question prefilled; an endpoint that refuses raises."""
        assert self.probe_prefill is not None
        text = prefill_text(self.probe_prefill_into)
        messages, extra = prefill_request(self._messages, self.probe_prefill, text)
        self._transcript.append(
            {"step": self._step, "role": "probe_prefill", "content": text, "reasoning": None}
        )
        try:
            content = _text(
                self._complete(
                    role="probe", messages=messages, extra=extra, entry={"probe_mode": "prefill"}
                )
            )
        except AgentError as exc:
            raise AgentError(
                f"llm: the prefilled probe ({self.probe_prefill}) failed; does the endpoint "
                f"continue a partial assistant message that way? {exc}"
            ) from exc
        own, reasoning = continuation(content, text)
        self._transcript[-1]["content"] = own
        if reasoning:
            earlier = self._transcript[-1].get("reasoning")
            self._transcript[-1]["reasoning"] = f"{reasoning}\n{earlier}" if earlier else reasoning
        return own

    def transcript(self) -> list[dict[str, Any]]:
        """Every message of the episode: system, user, tool, assistant (with reasoning), probe."""
        return [dict(entry) for entry in self._transcript]

    def _require_context(self) -> EpisodeContext:
        if self._context is None:
            raise AgentError("llm: act() called before reset()")
        return self._context

    def _ask(self) -> ParsedReply:
        """One completion, read by the shared parser; its tool calls are owed an answer."""
        context = self._require_context()
        message = self._complete()
        parsed = parse_message(message, context.mode, tools=self.offers_tools)
        self._owed = parsed
        return parsed

    def _answer(self, text: str) -> None:
        """Tell the model `text`: as the answer to its tool call when it made one, else as a
        user message; calls of the same reply that were not run get their own answer."""
        owed, self._owed = self._owed, None
        if owed is None or owed.tool_call_id is None:
            self._add("user", text)
            return
        self._add("tool", text, api={"tool_call_id": owed.tool_call_id})
        for call_id in owed.ignored_calls:
            self._add("tool", NOT_RUN, api={"tool_call_id": call_id})

    def _render(self, observation: Mapping[str, Any], *, first: bool) -> str:
        context = self._require_context()
        parts = []
        if first:
            parts.append(f"Task:\n{context.instruction.strip()}")
        if self._note:
            parts.append(self._note)
        if context.mode == "keys":
            screen = str(observation.get("screen", "")).rstrip()
            if screen or not first:
                parts.append(f"Screen:\n```\n{truncate_middle(screen, self.max_output_chars)}\n```")
            else:
                parts.append("The terminal is ready. Send your first keystrokes.")
        elif not first:
            output = truncate_middle(str(observation.get("output", "")), self.max_output_chars)
            code = observation.get("exit_code", -1)
            status = "none (timed out or interrupted)" if code == -1 else str(code)
            parts.append(f"Exit code: {status}\nOutput:\n```\n{output}\n```")
        else:
            parts.append("The shell is ready. Send your first command.")
        left = context.max_steps - self._step
        if not first and left <= 5:
            parts.append(f"{left} {'step' if left == 1 else 'steps'} left; SUBMIT once done.")
        return "\n\n".join(parts)

    def _add(
        self, role: str, content: str, *, api: Mapping[str, Any] | None = None, **extra: Any
    ) -> None:
        api_role = {"probe_question": "user", "probe": "assistant"}.get(role, role)
        self._messages.append({"role": api_role, "content": content, **(api or {})})
        step = self._step if role in ("system", "user", "tool") else self._step + 1
        self._transcript.append(
            {"step": step, "role": role, "content": content, "reasoning": None, **extra}
        )

    def _complete(
        self,
        role: str = "assistant",
        messages: list[dict[str, Any]] | None = None,
        extra: Mapping[str, Any] | None = None,
        entry: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One request; returns the reply as an assistant message dict (content without
        reasoning, and its tool calls, which the history keeps for their answers)."""
        self._elide_history()
        options = self._sampling()
        if extra:
            options["extra_body"] = {**options.get("extra_body", {}), **extra}
        if self.offers_tools:
            options["tools"] = tool_schemas(self._require_context().mode)
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=messages or self._messages,  # type: ignore[arg-type]
                **options,
            )
        except self._openai.APIStatusError as exc:
            raise AgentError(
                f"llm: {self._where()} answered HTTP {exc.status_code} for model "
                f"{self.model!r}: {_short(exc.message)}"
            ) from exc
        except self._openai.APITimeoutError as exc:
            raise AgentError(
                f"llm: {self._where()} did not answer in time for model {self.model!r}: {exc}"
            ) from exc
        except self._openai.APIConnectionError as exc:
            raise AgentError(
                f"llm: cannot reach {self._where()} for model {self.model!r}: {exc}"
            ) from exc
        except self._openai.OpenAIError as exc:
            raise AgentError(
                f"llm: request to {self._where()} for model {self.model!r} failed: {exc}"
            ) from exc
        if not getattr(response, "choices", None):
            raise AgentError(f"llm: {self._where()} answered with no choices: {response!r:.200}")
        choice = response.choices[0]
        content, reasoning = split_reasoning(choice.message)
        calls = [call.model_dump(exclude_none=True) for call in choice.message.tool_calls or []]
        usage = response.usage.model_dump() if response.usage is not None else None
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
            entry = {**(entry or {}), "tool_calls": calls}
        self._add(role, _with_calls(content, calls), api=message,
                  finish_reason=choice.finish_reason, usage=usage, **(entry or {}))  # fmt: skip
        self._transcript[-1]["reasoning"] = reasoning
        return message

    def _sampling(self) -> dict[str, Any]:
        """Request options that are set (None ones are left out, not sent as null)."""
        options: dict[str, Any] = {}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        if self.extra_body:
            options["extra_body"] = self.extra_body
        return options

    def _where(self) -> str:
        return self.base_url or "the OpenAI API"

    def _elide_history(self) -> None:
        total = sum(len(m.get("content") or "") for m in self._messages)
        for message in self._messages[2:-1]:
            if total <= self.max_history_chars:
                break
            content = message.get("content") or ""
            if message["role"] in ("user", "tool") and not content.startswith("[elided"):
                total -= len(content)
                message["content"] = "[elided: earlier output dropped to fit the context]"
                total += len(message["content"])


def _text(message: Mapping[str, Any]) -> str:
    return str(message.get("content") or "")


def _with_calls(content: str, calls: list[dict[str, Any]]) -> str:
    """The reply as the transcript keeps it: its text, then each tool call written out (the
    trace audit reads what the model asked to run)."""
    texts = [content] if content else []
    for call in calls:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        texts.append(f"[tool call] {function.get('name')}({arguments})")
    return "\n".join(texts)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
