"""The llm agent: any OpenAI-compatible chat-completions endpoint, one fenced command per turn."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from termgym.agents._base import SUBMIT, EpisodeContext
from termgym.agents._probe import (
    check_probe_options,
    continuation,
    prefill_request,
    prefill_text,
)
from termgym.chat._budget import truncate_middle
from termgym.chat._parse import parse_reply, split_reasoning
from termgym.errors import AgentError

SYSTEM_PROMPT = """\
You are working in a Linux terminal to complete a task.

Each turn, think briefly if you like, then end your reply with exactly one fenced code block:

```bash
<a shell command; it may span several lines>
```

It runs in a persistent bash shell (the working directory and variables carry over), and \
you are shown its exit code and output. Use non-interactive commands only: no editors, \
pagers or prompts. When the task is complete, reply with the single word SUBMIT and no code \
block; your work is then checked and the episode ends. You have at most {max_steps} commands.
"""

KEYS_PROMPT = """\
You are typing into a Linux terminal to complete a task.

Each turn, think briefly if you like, then end your reply with exactly one fenced code block: \
either ```bash with a command line (typed, then Enter is pressed) or ```keys with raw \
keystrokes in this notation: plain characters, <Enter>, <Tab>, <Esc>, <BS>, <Up>, <Down>, \
<Left>, <Right>, <C-c> (Ctrl+c), <M-x> (Alt+x), <lt> (a literal "<"). You are shown the \
screen afterwards. When the task is complete, reply with the single word SUBMIT and no code \
block; your work is then checked. You have at most {max_steps} turns.
"""

PROBE_QUESTION = (
    "The task is over. List every instruction and rule you followed while working on it: "
    "each constraint, limit, threshold or value you applied, and where you learned it."
)

FORMAT_REMINDER = (
    "Your reply had no code block and was not SUBMIT. Reply with exactly one ```bash block "
    "holding the next command, or with the single word SUBMIT when the task is complete."
)


class LLMAgent:
    """An agent backed by an OpenAI-compatible chat-completions endpoint (see docs/agents.md).

    Args:
        model: Model name; defaults to $TERMGYM_LLM_MODEL.
        base_url: Endpoint, e.g. http://localhost:8000/v1 (vLLM) or http://localhost:11434/v1
            (Ollama); defaults to $TERMGYM_LLM_BASE_URL, then $OPENAI_BASE_URL, then OpenAI's.
        api_key: Defaults to $TERMGYM_LLM_KEY, then $OPENAI_API_KEY ("EMPTY" for a custom
            base_url that needs none).
        temperature: Sampling temperature (None: not sent, for models that refuse one).
        max_tokens: Cap on tokens per reply (None: the endpoint's default).
        timeout: Seconds one request may take.
        max_retries: Retries of the client library on connection errors, 408/409/429 and 5xx.
        max_output_chars: Characters of a command's output shown to the model (head and tail).
        max_history_chars: Once the conversation grows past this, the oldest outputs are elided.
        format_retries: Replies without a code block or SUBMIT tolerated in a row.
        probe: After SUBMIT, ask the model which instructions and rules it followed.
        probe_mode: "ask" (a user message) or "prefill" (the question as the start of the
            model's own answer; termgym/agents/_probe.py, docs/agents.md).
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
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise AgentError(
                "the llm agent needs the openai package: pip install 'termgym[llm]'"
            ) from exc
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
        self._messages: list[dict[str, str]] = []
        self._transcript: list[dict[str, Any]] = []
        self._step = 0
        self._note = ""
        self._probed = False

    def reset(self, context: EpisodeContext) -> None:
        """Start a conversation: the system prompt; the instruction comes with the first act."""
        self._context = context
        template = KEYS_PROMPT if context.mode == "keys" else SYSTEM_PROMPT
        self._messages = []
        self._transcript = []
        self._step = 0
        self._note = ""
        self._probed = False
        self._add("system", template.format(max_steps=context.max_steps))

    def act(self, observation: Mapping[str, Any]) -> str:
        """Show the observation to the model and return the action it answers with."""
        context = self._require_context()
        self._add("user", self._render(observation, first=self._step == 0))
        for _attempt in range(self.format_retries + 1):
            content = self._complete()
            action, self._note = parse_reply(content, context.mode)
            if action is not None:
                break
            self._add("user", FORMAT_REMINDER)
        else:
            raise AgentError(
                f"llm: model {self.model!r} answered {self.format_retries + 1} times in a row "
                "with neither a code block nor SUBMIT"
            )
        if action == SUBMIT:
            if self.probe_enabled:
                self.probe()
            return SUBMIT
        self._step += 1
        if self.probe_enabled and self._step >= context.max_steps:
            self.probe()  # the last allowed step: the episode ends without another turn
        return action

    def probe(self) -> str | None:
        """Ask the disclosure question once per episode; the answer goes in the transcript."""
        if self._probed or self._context is None:
            return None
        self._probed = True
        if self.probe_mode == "prefill":
            return self._prefilled_probe()
        self._add("probe_question", PROBE_QUESTION)
        try:
            return self._complete(role="probe", entry={"probe_mode": "ask"})
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
            content = self._complete(
                role="probe", messages=messages, extra=extra, entry={"probe_mode": "prefill"}
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
        """Every message of the episode: system, user, assistant (with reasoning), probe."""
        return [dict(entry) for entry in self._transcript]

    def _require_context(self) -> EpisodeContext:
        if self._context is None:
            raise AgentError("llm: act() called before reset()")
        return self._context

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

    def _add(self, role: str, content: str, **extra: Any) -> None:
        api_role = {"probe_question": "user", "probe": "assistant"}.get(role, role)
        self._messages.append({"role": api_role, "content": content})
        step = self._step if role in ("system", "user") else self._step + 1
        self._transcript.append(
            {"step": step, "role": role, "content": content, "reasoning": None, **extra}
        )

    def _complete(
        self,
        role: str = "assistant",
        messages: list[dict[str, Any]] | None = None,
        extra: Mapping[str, Any] | None = None,
        entry: Mapping[str, Any] | None = None,
    ) -> str:
        self._elide_history()
        options = self._sampling()
        if extra:
            options["extra_body"] = {**options.get("extra_body", {}), **extra}
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
            raise AgentError(f"llm: {self._where()} did not answer in time: {exc}") from exc
        except self._openai.APIConnectionError as exc:
            raise AgentError(f"llm: cannot reach {self._where()}: {exc}") from exc
        except self._openai.OpenAIError as exc:
            raise AgentError(f"llm: request to {self._where()} failed: {exc}") from exc
        if not getattr(response, "choices", None):
            raise AgentError(f"llm: {self._where()} answered with no choices: {response!r:.200}")
        choice = response.choices[0]
        content, reasoning = split_reasoning(choice.message)
        usage = response.usage.model_dump() if response.usage is not None else None
        self._add(role, content, finish_reason=choice.finish_reason, usage=usage, **(entry or {}))
        self._transcript[-1]["reasoning"] = reasoning
        return content

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
        total = sum(len(m["content"]) for m in self._messages)
        for message in self._messages[2:-1]:
            if total <= self.max_history_chars:
                break
            if message["role"] == "user" and not message["content"].startswith("[elided"):
                total -= len(message["content"])
                message["content"] = "[elided: earlier output dropped to fit the context]"
                total += len(message["content"])


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
