"""The disclosure probe: its question, and its two modes: asking it, or prefilling it as the
model's own words. The llm agent (`termgym.agents`) and the model gateway
(`termgym.gateway`, for agents whose calls went through it) ask it alike.

"ask" (the default) sends the question as a user message after the episode. "prefill"
places it as the start of the model's own answer (or reasoning) and asks the endpoint to
continue that partial assistant message, which makes a model far likelier to list what it
was told. Chat endpoints continue a partial assistant message in one of three ways
(docs/agents.md):

- "continue_final_message": vLLM and SGLang; the request carries
  `continue_final_message: true, add_generation_prompt: false`.
- "prefix": DeepSeek (on its /beta base URL) and Mistral; the last message carries
  `prefix: true`.
- "trailing": OpenRouter and llama.cpp's llama-server; a trailing assistant message is
  continued as it is.

OpenAI's own chat API continues none: prefill there is refused when the agent is made, and
an endpoint that refuses the request fails the probe with an AgentError, never falling back
to asking.
"""

from __future__ import annotations

from typing import Any, Literal

from termgym.errors import AgentError

ProbeMode = Literal["ask", "prefill"]
PROBE_MODES: tuple[ProbeMode, ...] = ("ask", "prefill")

PREFILL_STYLES: dict[str, str] = {
    "continue_final_message": "vLLM, SGLang",
    "prefix": "DeepSeek (base URL .../beta), Mistral",
    "trailing": "OpenRouter, llama.cpp's llama-server",
}
PREFILL_TARGETS = ("answer", "reasoning")

PROBE_QUESTION = (
    "The task is over. List every instruction and rule you followed while working on it: "
    "each constraint, limit, threshold or value you applied, and where you learned it."
)
"""The question, asked as a user message after the episode (mode "ask")."""

EPISODE_ENDED = "The episode is over: your work was handed in for checking."
"""The answer to a tool call the model made that no longer runs (the episode ended)."""

PREFILL_TEXT = (
    "Before I finish, let me list every instruction and rule I followed while working on "
    "this task: each constraint, limit, threshold or value I applied, and where I learned "
    "it.\n\n1."
)
"""The probe question as the start of the model's own words."""


def check_probe_options(mode: str, style: str | None, target: str, base_url: str | None) -> None:
    """Refuse a probe configuration that cannot work, saying what was expected."""
    if mode not in PROBE_MODES:
        raise AgentError(f"llm: probe_mode: expected one of {', '.join(PROBE_MODES)}, got {mode!r}")
    if mode != "prefill":
        return
    styles = "; ".join(f"{name} ({who})" for name, who in PREFILL_STYLES.items())
    if style not in PREFILL_STYLES:
        raise AgentError(
            f"llm: probe_mode=prefill needs probe_prefill, how the endpoint continues a "
            f"partial assistant message: one of {styles}; got {style!r}"
        )
    if target not in PREFILL_TARGETS:
        raise AgentError(
            f"llm: probe_prefill_into: expected one of {', '.join(PREFILL_TARGETS)}, got {target!r}"
        )
    if not base_url or "api.openai.com" in base_url:
        raise AgentError(
            "llm: probe_mode=prefill: OpenAI's chat API does not continue a partial assistant "
            f"message; use an endpoint that does ({styles}) or probe_mode=ask"
        )


def prefill_text(target: str) -> str:
    """What the partial assistant message holds: the question, opening the reasoning when
    `target` is "reasoning" (a <think> block the model goes on with)."""
    return f"<think>\n{PREFILL_TEXT}" if target == "reasoning" else PREFILL_TEXT


def prefill_request(
    messages: list[dict[str, Any]], style: str, text: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The messages and extra body fields that ask the endpoint to continue `text`."""
    last: dict[str, Any] = {"role": "assistant", "content": text}
    extra: dict[str, Any] = {}
    if style == "continue_final_message":
        extra = {"continue_final_message": True, "add_generation_prompt": False}
    elif style == "prefix":
        last["prefix"] = True
    return [*messages, last], extra


def continuation(content: str, text: str) -> tuple[str, str | None]:
    """The model's own words, as (answer, reasoning): `content` without the prefilled text
    should the endpoint echo it back, and split at a closing </think> when the prefill opened
    the reasoning (the continuation then has no opening tag)."""
    stripped = text.removeprefix("<think>\n")
    for prefix in (text, stripped):
        if content.startswith(prefix):
            content = content[len(prefix) :]
            break
    if text.startswith("<think>") and "</think>" in content and "<think>" not in content:
        reasoning, _, answer = content.partition("</think>")
        return answer.strip(), reasoning.strip()
    return content, None
